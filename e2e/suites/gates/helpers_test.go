package gates_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// The names every JobSet of the suite uses: the per-pod PVC template "ckpt" (its volumeMount)
// and the claim template "dev".
const (
	ckpt = "ckpt"
	dev  = "dev"
)

// stage is one ReplicatedJob of a test JobSet: its Jobs (replicas), pods per Job (parallelism
// = completions, Indexed) and how long a pod runs.
type stage struct {
	name     string
	replicas int32
	pods     int32
	run      string
}

// gateTest runs fn as a feature of one assessment in a namespace of its own, where JobSet has
// the alpha gate gate (JobSet v0.12.0 or later, all of repo.JobSetAlphaGates on).
func gateTest(t *testing.T, gate, feature, assessment string, fn func(ctx context.Context, t *testing.T, cfg *envconf.Config, c client.Client, ns string)) {
	t.Helper()
	framework.RequireJobSet(t, framework.ElasticJobSetSince, "no "+gate+" gate")
	testenv.Test(t, framework.NamespacedFeature(feature, assessment, func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		fn(ctx, t, cfg, framework.Client(t, cfg), framework.NamespaceFrom(ctx))
		return ctx
	}))
}

// newJobSet is a JobSet whose ReplicatedJobs start in order (sequencer, waiting for waitFor),
// each gang-scheduled per stage by scheduler, with a per-pod PVC "ckpt" for the ReplicatedJobs
// perPod names (Retain on every event, so that the test sees what is kept) and a per-Job claim
// "dev" for those withClaims names.
func newJobSet(ns, name string, scheduler contract.Scheduler, waitFor string, perPod, withClaims []string, stages ...stage) *jobsetv1alpha2.JobSet {
	js := &jobsetv1alpha2.JobSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{
			contract.SchedulerAnnotationKey:       string(scheduler),
			contract.ExecutionPolicyAnnotationKey: "InOrder",
			contract.WaitForAnnotationKey:         waitFor,
			contract.PoliciesAnnotationKey: fmt.Sprintf(`[{targetReplicatedJobs: [%s], templates: [{metadata: {name: %s}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Mi}}}}],
  retentionPolicy: {whenComplete: Retain, whenFailed: Retain, whenDeleted: Delete}}]`, strings.Join(perPod, ", "), ckpt),
		}},
	}
	for _, s := range stages {
		rj := jobsetv1alpha2.ReplicatedJob{Name: s.name, Replicas: s.replicas, Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Parallelism:    ptr.To(s.pods),
			Completions:    ptr.To(s.pods),
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			BackoffLimit:   ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{framework.DelayAnnotationKey: s.run}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "worker", Image: "busybox",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}},
				},
			},
		}}}
		if slices.Contains(perPod, s.name) {
			rj.Template.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: ckpt, MountPath: "/ckpt"}}
		}
		if slices.Contains(withClaims, s.name) {
			rj.Template.Annotations = map[string]string{contract.TemplatesAnnotationKey: fmt.Sprintf(
				`[{metadata: {name: %s}, spec: {devices: {requests: [{name: d, exactly: {deviceClassName: %s}}]}}}]`, dev, deviceClass)}
		}
		js.Spec.ReplicatedJobs = append(js.Spec.ReplicatedJobs, rj)
	}
	return js
}

// inPlace makes js restart in place (KEP-467): the strategy, and what JobSet's webhook asks of
// every ReplicatedJob for it.
func inPlace(js *jobsetv1alpha2.JobSet) {
	js.Spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{MaxRestarts: 3, RestartStrategy: jobsetv1alpha2.InPlaceRestart}
	for i := range js.Spec.ReplicatedJobs {
		spec := &js.Spec.ReplicatedJobs[i].Template.Spec
		spec.BackoffLimit = ptr.To[int32](math.MaxInt32)
		spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
	}
}

// create waits until the add-ons' webhooks answer (a dry run comes back with the sequencer's
// gate and the gang's name), then creates js.
func create(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet) {
	t.Helper()
	framework.Eventually(ctx, t, 30*time.Second, "the add-ons' JobSet webhooks answer", func(ctx context.Context) (bool, string, error) {
		probe := js.DeepCopy()
		if err := c.Create(ctx, probe, client.DryRunAll); err != nil {
			return false, err.Error(), nil
		}
		last := probe.Spec.ReplicatedJobs[len(probe.Spec.ReplicatedJobs)-1].Template.Spec.Template.Spec
		gated := slices.ContainsFunc(last.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == contract.SequencerSchedulingGateValue })
		named := last.SchedulingGroup != nil || probe.Spec.ReplicatedJobs[0].Template.Spec.Template.Annotations[contract.VolcanoGroupNameAnnotationKey] != "" ||
			probe.Spec.ReplicatedJobs[0].Template.Spec.Template.Labels[contract.CoschedulingPodGroupLabelKey] != ""
		return gated && named, fmt.Sprintf("gated %v, gang named %v", gated, named), nil
	})
	if err := c.Create(ctx, js); err != nil {
		t.Fatalf("creating JobSet %s: %v", js.Name, err)
	}
}

// pods lists the JobSet's pods of ReplicatedJob rj (all when rj is empty), not deleted.
func pods(ctx context.Context, c client.Client, ns, js, rj string) ([]corev1.Pod, error) {
	sel := client.MatchingLabels{contract.JobSetNameLabelKey: js}
	if rj != "" {
		sel[jobsetv1alpha2.ReplicatedJobNameKey] = rj
	}
	var list corev1.PodList
	if err := c.List(ctx, &list, client.InNamespace(ns), sel); err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func gatedPod(p corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == contract.SequencerSchedulingGateValue })
}

// index is a pod's completion index.
func index(p corev1.Pod) string { return p.Annotations[batchv1.JobCompletionIndexAnnotation] }

// waitPods waits until ReplicatedJob rj has exactly n pods (not deleted, not failed), each
// running (released) or each gated (not released), as want says, and returns them.
func waitPods(ctx context.Context, t *testing.T, c client.Client, ns, js, rj string, n int, released bool) []corev1.Pod {
	t.Helper()
	var got []corev1.Pod
	framework.Eventually(ctx, t, 90*time.Second, fmt.Sprintf("%s: %d pods of %s, released %v", js, n, rj, released), func(ctx context.Context) (bool, string, error) {
		all, err := pods(ctx, c, ns, js, rj)
		if err != nil {
			return false, err.Error(), nil
		}
		got = nil
		var states []string
		ok := true
		for _, p := range all {
			if p.Status.Phase == corev1.PodFailed {
				continue
			}
			got = append(got, p)
			states = append(states, fmt.Sprintf("%s[%s] %s gated=%v", p.Name, index(p), p.Status.Phase, gatedPod(p)))
			if released {
				ok = ok && !gatedPod(p) && p.Status.Phase == corev1.PodRunning
			} else {
				ok = ok && gatedPod(p) && p.Spec.NodeName == ""
			}
		}
		return ok && len(got) == n, strings.Join(states, "; "), nil
	})
	return got
}

// uids maps each object's name to its UID.
func uids[T client.Object](objs []T) map[string]types.UID {
	out := map[string]types.UID{}
	for _, o := range objs {
		out[o.GetName()] = o.GetUID()
	}
	return out
}

// pvcs lists the JobSet's PVCs by name.
func pvcs(ctx context.Context, t *testing.T, c client.Client, ns, js string) map[string]types.UID {
	t.Helper()
	var list corev1.PersistentVolumeClaimList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: js}); err != nil {
		t.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, p := range list.Items {
		out[p.Name] = p.UID
	}
	return out
}

// claims lists the ResourceClaims of the namespace (not deleted) by name.
func claims(ctx context.Context, t *testing.T, c client.Client, ns string) map[string]types.UID {
	t.Helper()
	var list resourcev1.ResourceClaimList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, rc := range list.Items {
		if rc.DeletionTimestamp == nil {
			out[rc.Name] = rc.UID
		}
	}
	return out
}

// jobs lists the JobSet's Jobs (not deleted) by name.
func jobs(ctx context.Context, t *testing.T, c client.Client, ns, js string) map[string]*batchv1.Job {
	t.Helper()
	var list batchv1.JobList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: js}); err != nil {
		t.Fatal(err)
	}
	out := map[string]*batchv1.Job{}
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			out[list.Items[i].Name] = &list.Items[i]
		}
	}
	return out
}

// waitWorkloadMinCounts waits until the kubernetes backend's Workload js has, per template
// (stage-<i>), the gang minCount want, and the PodGroups of released stages the same.
func waitWorkloadMinCounts(ctx context.Context, t *testing.T, c client.Client, ns, js string, want map[string]int32, podGroups map[string]int32) {
	t.Helper()
	framework.Eventually(ctx, t, 30*time.Second, fmt.Sprintf("Workload %s minCounts %v, PodGroups %v", js, want, podGroups), func(ctx context.Context) (bool, string, error) {
		var wl schedulingv1beta1.Workload
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: js}, &wl); err != nil {
			return false, err.Error(), nil
		}
		got := map[string]int32{}
		for _, tmpl := range wl.Spec.PodGroupTemplates {
			got[tmpl.Name] = minCount(tmpl.SchedulingPolicy)
		}
		gotPG := map[string]int32{}
		for name := range podGroups {
			var pg schedulingv1beta1.PodGroup
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &pg); err != nil {
				return false, err.Error(), nil
			}
			gotPG[name] = minCount(pg.Spec.SchedulingPolicy)
		}
		return fmt.Sprint(got) == fmt.Sprint(want) && fmt.Sprint(gotPG) == fmt.Sprint(podGroups), fmt.Sprintf("templates %v, PodGroups %v", got, gotPG), nil
	})
}

func minCount(p schedulingv1beta1.PodGroupSchedulingPolicy) int32 {
	if p.Gang == nil {
		return 0
	}
	return p.Gang.MinCount
}

// scale sets parallelism and completions of each named ReplicatedJob of the running JobSet (the
// ElasticJobSet gate lets them change when equal), retrying on conflicts.
func scale(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, to map[string]int32) error {
	t.Helper()
	var err error
	for range 10 {
		var cur jobsetv1alpha2.JobSet
		if err = c.Get(ctx, client.ObjectKeyFromObject(js), &cur); err != nil {
			return err
		}
		for i := range cur.Spec.ReplicatedJobs {
			if n, ok := to[cur.Spec.ReplicatedJobs[i].Name]; ok {
				cur.Spec.ReplicatedJobs[i].Template.Spec.Parallelism = ptr.To(n)
				cur.Spec.ReplicatedJobs[i].Template.Spec.Completions = ptr.To(n)
			}
		}
		if err = c.Update(ctx, &cur); !apierrors.IsConflict(err) {
			return err
		}
	}
	return err
}

// waitJobSizes waits until each named Job runs parallelism = completions = want.
func waitJobSizes(ctx context.Context, t *testing.T, c client.Client, ns string, want map[string]int32) {
	t.Helper()
	framework.Eventually(ctx, t, 30*time.Second, fmt.Sprintf("Jobs scaled to %v", want), func(ctx context.Context) (bool, string, error) {
		got := map[string]string{}
		ok := true
		for name, n := range want {
			var j batchv1.Job
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &j); err != nil {
				return false, err.Error(), nil
			}
			got[name] = fmt.Sprintf("%d/%d", ptr.Deref(j.Spec.Parallelism, -1), ptr.Deref(j.Spec.Completions, -1))
			ok = ok && ptr.Deref(j.Spec.Parallelism, -1) == n && ptr.Deref(j.Spec.Completions, -1) == n
		}
		return ok, fmt.Sprint(got), nil
	})
}

// podClaimNames are the ResourceClaim names a pod's spec names.
func podClaimNames(p corev1.Pod) []string {
	var out []string
	for _, rc := range p.Spec.ResourceClaims {
		out = append(out, ptr.Deref(rc.ResourceClaimName, ""))
	}
	return out
}

// podPVCNames are the PVC names a pod's volumes name.
func podPVCNames(p corev1.Pod) []string {
	var out []string
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		}
	}
	return out
}

// notDeletedPVCs lists the JobSet's PVCs that have no deletion timestamp.
func notDeletedPVCs(ctx context.Context, t *testing.T, c client.Client, ns, js string) []string {
	t.Helper()
	var list corev1.PersistentVolumeClaimList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: js}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p.Name)
		}
	}
	return out
}
