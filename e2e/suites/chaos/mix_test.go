package chaos_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// The mix: JobSet i has shape i%4, and retention Retain when (i/4) is even, Delete when odd.
//
//	0 storage+claims  volumeclaims (shared data, per-pod ckpt on worker) and resourceclaims (dev
//	                  on worker); default scheduler; worker 2 Jobs x 2 pods.
//	1 staged-volcano  sequencer InOrder (init 1x1, then train 2x2) and a Volcano gang per stage.
//	2 staged-cosched  sequencer InOrder (init, then train), a coscheduling gang per stage and
//	                  per-pod ckpt PVCs on train.
//	3 fan-in          sequencer depends-on: c (2 Jobs x 1 pod, claim dev) after a and b; shared
//	                  data PVC mounted by all; default scheduler.
const shapes = 4

// deviceClass is the chaos suite's DRA class: network-attached devices, enough for every claim.
const deviceClass = "chaos.testbed.jobset-addons.io"

func retention(i int) string {
	if (i/shapes)%2 == 0 {
		return "Retain"
	}
	return "Delete"
}

func jobSetName(i int) string {
	return fmt.Sprintf("%s-%03d", []string{"sc", "sv", "sk", "fi"}[i%shapes], i)
}

// The policies and claim templates of the mix, as the annotations hold them: %[1]s is the
// retention, %[2]s (ckptPolicy) the ReplicatedJob that gets per-pod ckpt PVCs.
const (
	dataPolicy = `- templates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteMany], resources: {requests: {storage: 1Gi}}}}]
  retentionPolicy: {whenComplete: %[1]s}
`
	ckptPolicy = `- targetReplicatedJobs: [%[2]s]
  templates: [{metadata: {name: ckpt}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]
  retentionPolicy: {whenComplete: %[1]s}
`
	claimTemplates = `- metadata: {name: dev}
  spec: {devices: {requests: [{name: dev, exactly: {deviceClassName: ` + deviceClass + `}}]}}
  whenJobFinished: %[1]s
`
)

// replicated is one ReplicatedJob of jobs Jobs of pods Indexed pods each (2 s runs, 100m CPU),
// mounting mounts.
func replicated(name string, jobs, pods int, mounts ...string) *addontest.ReplicatedJobWrapper {
	return addontest.ReplicatedJob(name).Replicas(int32(jobs)).Pods(int32(pods)).Requests("100m", "").
		PodAnnotation(framework.DelayAnnotationKey, "2s").Mount(mounts...)
}

// mixJobSet is JobSet i of the mix in namespace ns.
func mixJobSet(ns string, i int) *jobsetv1alpha2.JobSet {
	ret := retention(i)
	policies := func(ps ...string) string {
		return fmt.Sprintf(strings.Join(ps, ""), ret, "worker", "train")
	}
	claims := fmt.Sprintf(claimTemplates, ret)
	js := addontest.JobSet(ns, jobSetName(i))
	switch i % shapes {
	case 0:
		js.Annotation(contract.PoliciesAnnotationKey, policies(dataPolicy, ckptPolicy)).ReplicatedJobs(
			replicated("worker", 2, 2, "data", "ckpt").JobAnnotation(contract.TemplatesAnnotationKey, claims))
	case 1:
		js.InOrder().Annotation(contract.SchedulerAnnotationKey, "volcano").
			ReplicatedJobs(replicated("init", 1, 1), replicated("train", 2, 2))
	case 2:
		js.InOrder().Annotation(contract.SchedulerAnnotationKey, "coscheduling").
			Annotation(contract.PoliciesAnnotationKey, policies(strings.ReplaceAll(ckptPolicy, "%[2]s", "%[3]s"))).
			ReplicatedJobs(replicated("init", 1, 1), replicated("train", 2, 2, "ckpt"))
	case 3:
		js.Annotation(contract.PoliciesAnnotationKey, policies(dataPolicy)).ReplicatedJobs(
			replicated("a", 1, 1, "data"), replicated("b", 1, 1, "data"),
			replicated("c", 2, 1, "data").DependsOnAnnotation("[{name: a, status: Complete}, {name: b, status: Complete}]").
				JobAnnotation(contract.TemplatesAnnotationKey, claims))
	}
	return js.Obj()
}

// stagesOf are the ReplicatedJobs of JobSet i in the order they must run; one stage for shape 0.
func stagesOf(i int) [][]string {
	return [][][]string{{{"worker"}}, {{"init"}, {"train"}}, {{"init"}, {"train"}}, {{"a", "b"}, {"c"}}}[i%shapes]
}

// expected are the objects JobSet i makes, by kind, each with whether it must exist at the end.
type expected struct {
	pvcs, claims, podGroups map[string]bool
}

func expectedOf(i int) expected {
	name, keep := jobSetName(i), retention(i) == "Retain"
	e := expected{pvcs: map[string]bool{}, claims: map[string]bool{}, podGroups: map[string]bool{}}
	perPod := func(rj string, jobs, pods int) {
		for j := range jobs {
			for p := range pods {
				n, _ := contract.PerPodVolumeClaimName("ckpt", name, rj, j, p)
				e.pvcs[n] = keep
			}
		}
	}
	claims := func(rj string, jobs int) {
		for j := range jobs {
			n, _ := contract.ResourceClaimName(fmt.Sprintf("%s-%s-%d", name, rj, j), "dev", 0)
			e.claims[n] = keep
		}
	}
	shared := func() { n, _ := contract.SharedVolumeClaimName("data", name); e.pvcs[n] = keep }
	stagePodGroups := func() {
		for s := range 2 {
			n, _ := contract.StagePodGroupName(name, s)
			e.podGroups[n] = false // deleted once the stage, then the JobSet, finished
		}
	}
	switch i % shapes {
	case 0:
		shared()
		perPod("worker", 2, 2)
		claims("worker", 2)
	case 1:
		stagePodGroups()
	case 2:
		stagePodGroups()
		perPod("train", 2, 2)
	case 3:
		shared()
		claims("c", 2)
	}
	return e
}

// probeAll passes once every add-on's webhooks answer: a dry-run of a JobSet of shape 2 comes
// back mutated by volumeclaims, sequencer and podgroups, and a dry-run Job with a claim template
// comes back with its claim.
func probeAll(ctx context.Context, cfg *envconf.Config) error {
	c, err := client.New(cfg.Client().RESTConfig(), client.Options{Scheme: framework.Scheme})
	if err != nil {
		return err
	}
	js := mixJobSet(corev1.NamespaceDefault, 2)
	if err := c.Create(ctx, js, client.DryRunAll); err != nil {
		return err
	}
	train := js.Spec.ReplicatedJobs[1].Template.Spec.Template
	if js.Annotations[contract.VolumeClaimsAdmittedAnnotationKey] == "" || train.Labels[contract.CoschedulingPodGroupLabelKey] == "" ||
		train.Labels[contract.SequencerGatedLabelKey] == "" {
		return fmt.Errorf("the JobSet came back unmutated: annotations %v, train labels %v", js.Annotations, train.Labels)
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceDefault, Name: "probe-w-0",
			Labels:      map[string]string{contract.JobSetNameLabelKey: "probe"},
			Annotations: map[string]string{contract.TemplatesAnnotationKey: `[{metadata: {name: a}, spec: {}}]`}},
		Spec: js.Spec.ReplicatedJobs[0].Template.Spec,
	}
	if err := c.Create(ctx, job, client.DryRunAll); err != nil {
		return err
	}
	if len(job.Spec.Template.Spec.ResourceClaims) != 1 {
		return errors.New("the Job came back without its claim")
	}
	return nil
}

// createRetrying creates obj, retrying for up to timeout while the apiserver cannot reach a
// webhook (a replica killed in the middle of a call, an outage); it returns how many tries
// failed and the first failure's message.
func createRetrying(ctx context.Context, c client.Client, obj client.Object, timeout time.Duration) (failed int, first string, err error) {
	deadline := time.Now().Add(timeout)
	for {
		err = c.Create(ctx, obj.DeepCopyObject().(client.Object))
		if err == nil || !strings.Contains(err.Error(), "failed calling webhook") || time.Now().After(deadline) {
			return failed, first, err
		}
		if failed == 0 {
			first = err.Error()
		}
		failed++
		time.Sleep(250 * time.Millisecond)
	}
}
