package barrier

import (
	"regexp"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/sequencer"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// PodsRefused tells whether message, the API server's refusal of a pod of job, a Job of js (the
// Job controller's FailedCreate Event), is about what the sequencer put in the pod: js has a
// start barrier and the message names the barrier container (or its volume, of the same name:
// a quota that asks for a limit, Pod Security), or states a LimitRange constraint on containers
// that the barrier container breaks (LimitRange messages name no container), as the webhook put
// it in the pod template of job's ReplicatedJob. A refusal of anything else (another add-on's
// PVC or claim, the user's containers) is not the sequencer's to tell. what names the container
// for the Warning.
func PodsRefused(js *jobsetv1alpha2.JobSet, job *batchv1.Job, message string) (what string, ok bool) {
	if !sequencer.UsesBarrier(js) {
		return "", false
	}
	if !addon.NamedIn(message)[contract.StartBarrierContainerName] && !breaksLimitRange(barrierOf(js, job), message) {
		return "", false
	}
	return "the start barrier's init container " + contract.StartBarrierContainerName, true
}

// barrierOf is the barrier init container in the pod template of job's ReplicatedJob in js (the
// JobSet's: the Jobs' cache holds no pod template), nil when there is none.
func barrierOf(js *jobsetv1alpha2.JobSet, job *batchv1.Job) *corev1.Container {
	if job == nil {
		return nil
	}
	rj := jobsets.ReplicatedJob(js, job.Labels[contract.ReplicatedJobNameLabelKey])
	if rj == nil {
		return nil
	}
	spec := &rj.Template.Spec.Template.Spec
	for i := range spec.InitContainers {
		if spec.InitContainers[i].Name == contract.StartBarrierContainerName {
			return &spec.InitContainers[i]
		}
	}
	return nil
}

// The LimitRanger admission plugin's messages about a constraint of type Container, each
// naming the resource and the enforced quantity: "minimum cpu usage per Container is 100m, but
// request is 10m", "maximum memory usage per Container is 20Mi, but limit is 32Mi", "cpu max
// limit to request ratio per Container is 4, but provided ratio is 5.000000" (several are joined
// in one message).
var (
	limitRangeBound = regexp.MustCompile(`(minimum|maximum) (\S+) usage per Container is ([0-9][^,\s\]]*)`)
	limitRangeRatio = regexp.MustCompile(`(\S+) max limit to request ratio per Container is ([0-9][^,\s\]]*)`)
)

// breaksLimitRange tells whether c (the barrier container) breaks one of the LimitRange
// constraints message states.
func breaksLimitRange(c *corev1.Container, message string) bool {
	if c == nil {
		return false
	}
	for _, m := range limitRangeBound.FindAllStringSubmatch(message, -1) {
		name, enforced, ok := constraint(m[2], m[3])
		if !ok {
			continue
		}
		req, hasReq := c.Resources.Requests[name]
		lim, hasLim := c.Resources.Limits[name]
		if m[1] == "minimum" && (!hasReq || req.Cmp(enforced) < 0 || hasLim && lim.Cmp(enforced) < 0) ||
			m[1] == "maximum" && (!hasLim || lim.Cmp(enforced) > 0 || hasReq && req.Cmp(enforced) > 0) {
			return true
		}
	}
	for _, m := range limitRangeRatio.FindAllStringSubmatch(message, -1) {
		name, ratio, ok := constraint(m[1], m[2])
		if !ok {
			continue
		}
		req, lim := c.Resources.Requests[name], c.Resources.Limits[name]
		if req.Sign() <= 0 || lim.Sign() <= 0 || lim.AsApproximateFloat64() > req.AsApproximateFloat64()*ratio.AsApproximateFloat64() {
			return true
		}
	}
	return false
}

// constraint parses a constraint's resource name and quantity ("100m", or "100m." at the end
// of a sentence).
func constraint(name, quantity string) (corev1.ResourceName, resource.Quantity, bool) {
	q, err := resource.ParseQuantity(strings.TrimRight(quantity, "."))
	return corev1.ResourceName(name), q, err == nil
}
