package trainer_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	coschedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// runtime reads testdata/story2-runtime.yaml into namespace ns, then edits it.
func runtime(t *testing.T, ns string, edit func(spec map[string]any)) *unstructured.Unstructured {
	t.Helper()
	return runtimeFrom(t, "story2-runtime.yaml", ns, edit)
}

// runtimeFrom reads the TrainingRuntime of testdata/file into namespace ns, then edits it.
func runtimeFrom(t *testing.T, file, ns string, edit func(spec map[string]any)) *unstructured.Unstructured {
	t.Helper()
	return framework.TrainingRuntimeFrom(t, filepath.Join("testdata", file), ns, edit)
}

// trainJob is a TrainJob of the TrainingRuntime runtime.
func trainJob(ns, name, runtime string) *unstructured.Unstructured {
	return framework.TrainJob(ns, name, runtime)
}

// create creates the TrainingRuntime, then the TrainJob (framework.CreateTrainJob).
func create(ctx context.Context, t *testing.T, c client.Client, rt, tj *unstructured.Unstructured) {
	t.Helper()
	framework.CreateTrainJob(ctx, t, c, rt, tj)
}

// coschedulingPolicy is Trainer's own gang: spec.podGroupPolicy.coscheduling.
func coschedulingPolicy(spec map[string]any) {
	spec["podGroupPolicy"] = map[string]any{"coscheduling": map[string]any{"scheduleTimeoutSeconds": int64(60)}}
}

// withoutAnnotations removes the JobSet template's annotations whose key starts with prefix.
func withoutAnnotations(prefix string) func(map[string]any) {
	return func(spec map[string]any) {
		a := spec["template"].(map[string]any)["metadata"].(map[string]any)["annotations"].(map[string]any)
		for k := range a {
			if strings.HasPrefix(k, prefix) {
				delete(a, k)
			}
		}
	}
}

// waitTrainJob waits until the TrainJob has the condition cond (Complete, Failed) True.
func waitTrainJob(ctx context.Context, t *testing.T, c client.Client, tj *unstructured.Unstructured, cond string) {
	t.Helper()
	framework.WaitTrainJob(ctx, t, c, tj, cond, 2*time.Minute)
}

// podWatch polls the pods of one JobSet every 50 ms and records what the order check needs:
// node pods seen behind the sequencer's gate, and any node pod seen bound to a node while an
// initializer pod had not Succeeded.
type podWatch struct {
	mu         sync.Mutex
	gated      bool
	violations []string
	stop       func()
}

func watchPods(ctx context.Context, c client.Client, ns, jobSet string) *podWatch {
	w := &podWatch{}
	w.stop = framework.PollPods(ctx, c, func(pods []corev1.Pod) {
		succeeded := 0
		for _, p := range pods {
			if p.Labels[contract.ReplicatedJobNameLabelKey] != "node" && p.Status.Phase == corev1.PodSucceeded {
				succeeded++
			}
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, p := range pods {
			if p.Labels[contract.ReplicatedJobNameLabelKey] != "node" {
				continue
			}
			if slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == contract.SequencerSchedulingGateValue }) {
				w.gated = true
			}
			if p.Spec.NodeName != "" && succeeded < 2 {
				w.violations = append(w.violations, fmt.Sprintf("node pod %s bound to %s with %d of 2 initializer pods Succeeded", p.Name, p.Spec.NodeName, succeeded))
			}
		}
	}, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: jobSet})
	return w
}

func (w *podWatch) finish() (gated bool, violations []string) {
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gated, w.violations
}

// TestStory2 runs KEP-572 story 2 as a TrainJob of a TrainingRuntime whose JobSet template asks
// all three of volumeclaims, the sequencer and podgroups, and checks each one's part.
func TestStory2(t *testing.T) {
	f := framework.NamespacedFeature("Trainer: KEP-572 story 2 with the add-ons", "shared PVC, stage order, one gang per stage", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		const name = "qwen2-5"
		rt := runtime(t, ns, nil)
		tj := trainJob(ns, name, rt.GetName())
		w := watchPods(ctx, c, ns, name)
		create(ctx, t, c, rt, tj)
		waitTrainJob(ctx, t, c, tj, "Complete")
		gated, violations := w.finish()

		// Trainer made the JobSet from the runtime, with the add-ons' annotations.
		js := &jobsetv1alpha2.JobSet{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, js); err != nil {
			t.Fatal(err)
		}
		if o := metav1.GetControllerOf(js); o == nil || o.Kind != "TrainJob" || o.Name != name {
			t.Errorf("JobSet controller %+v, want TrainJob %s", o, name)
		}

		// volumeclaims: one PVC, every pod of the three ReplicatedJobs mounts it.
		claim := "initializer-" + name
		var pvcs corev1.PersistentVolumeClaimList
		if err := c.List(ctx, &pvcs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(pvcs.Items) != 1 || pvcs.Items[0].Name != claim {
			t.Errorf("PVCs %v, want only %s", names(pvcs.Items), claim)
		}
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: name}); err != nil {
			t.Fatal(err)
		}
		perRJ := map[string]int{}
		for _, p := range pods.Items {
			rj := p.Labels[contract.ReplicatedJobNameLabelKey]
			perRJ[rj]++
			if !slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool {
				return v.Name == "initializer" && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim
			}) {
				t.Errorf("pod %s (%s) does not mount PVC %s as volume initializer: %+v", p.Name, rj, claim, p.Spec.Volumes)
			}
			// podgroups: one gang per stage, scheduled by coscheduling.
			want := name + "-stage-0"
			if rj == "node" {
				want = name + "-stage-1"
			}
			if got := p.Labels[contract.CoschedulingPodGroupLabelKey]; got != want {
				t.Errorf("pod %s (%s) pod-group %q, want %q", p.Name, rj, got, want)
			}
			if p.Spec.SchedulerName != framework.CoschedulingSchedulerName {
				t.Errorf("pod %s schedulerName %q, want %q", p.Name, p.Spec.SchedulerName, framework.CoschedulingSchedulerName)
			}
		}
		if want := map[string]int{"dataset-initializer": 1, "model-initializer": 1, "node": 2}; !mapsEqual(perRJ, want) {
			t.Errorf("pods per ReplicatedJob %v, want %v", perRJ, want)
		}

		// The sequencer: node waited behind its gate, and no node pod was bound before both
		// initializers had Succeeded.
		if !gated {
			t.Error("the node pods were never seen behind the sequencer's scheduling gate")
		}
		if len(violations) > 0 {
			t.Errorf("released early, %d times; first: %s", len(violations), violations[0])
		}

		// Events: one PVC made, one stage released, the two stages' PodGroups made once each.
		framework.WaitEventCounts(ctx, t, c, js, map[string]int{"VolumeClaimsCreated": 1, "StageReleased": 1, "PodGroupCreated": 2})
		created, err := framework.EventMessages(ctx, c, js, "PodGroupCreated")
		if err != nil {
			t.Fatal(err)
		}
		for _, stage := range []string{name + "-stage-0", name + "-stage-1"} {
			if !slices.ContainsFunc(created, func(m string) bool { return strings.Contains(m, "PodGroup "+stage+":") }) {
				t.Errorf("no PodGroupCreated event for %s: %q", stage, created)
			}
		}
		// Trainer made no PodGroup of its own (the runtime has no podGroupPolicy).
		var pgs coschedv1alpha1.PodGroupList
		if err := c.List(ctx, &pgs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, pg := range pgs.Items {
			if o := metav1.GetControllerOf(&pg); o == nil || o.Kind != "JobSet" {
				t.Errorf("PodGroup %s is controlled by %+v, not the JobSet", pg.Name, o)
			}
		}
		return ctx
	})
	testenv.Test(t, f)
}

// TestPodGroupPolicyConflict: a runtime with Trainer's own podGroupPolicy whose JobSet template
// also asks podgroups for a gang. podgroups refuses the JobSet (Trainer's gang label on its pod
// templates, with the field named), Trainer reports the refusal as a Warning event on the
// TrainJob, and neither makes a PodGroup.
func TestPodGroupPolicyConflict(t *testing.T) {
	f := framework.NamespacedFeature("Trainer: podGroupPolicy and podgroups on one TrainJob", "refused, the field named, no PodGroup", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		const name = "both-gangs"
		rt := runtime(t, ns, coschedulingPolicy)
		tj := trainJob(ns, name, rt.GetName())
		create(ctx, t, c, rt, tj)

		var msg string
		framework.Eventually(ctx, t, time.Minute, "TrainJob event TrainJobResourcesCreationFailed", func(ctx context.Context) (bool, string, error) {
			msgs, err := framework.EventMessages(ctx, c, tj, "TrainJobResourcesCreationFailed")
			if err != nil || len(msgs) == 0 {
				return false, fmt.Sprint(msgs, err), nil
			}
			msg = msgs[0]
			return true, "", nil
		})
		for _, want := range []string{
			`admission webhook "mjobset.podgroups.jobset-addons.io" denied the request`,
			"spec.replicatedJobs[0].template.spec.template.metadata.labels[scheduling.x-k8s.io/pod-group]: Forbidden",
			fmt.Sprintf("set by Kubeflow Trainer for TrainJob %q", name),
			"remove spec.podGroupPolicy from the TrainingRuntime",
		} {
			if !strings.Contains(msg, want) {
				t.Errorf("event message %q: want it to say %q", msg, want)
			}
		}
		// Refused cleanly: no JobSet, so no PVC and no PodGroup of podgroups. Trainer may have
		// made its own PodGroup before its JobSet apply was refused (it applies its objects in
		// the order of a Go map's iteration, fixed when it starts).
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &jobsetv1alpha2.JobSet{}); !apierrors.IsNotFound(err) {
			t.Errorf("JobSet %s: got %v, want NotFound", name, err)
		}
		var pgs coschedv1alpha1.PodGroupList
		if err := c.List(ctx, &pgs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, pg := range pgs.Items {
			if o := metav1.GetControllerOf(&pg); o == nil || o.Kind != "TrainJob" {
				t.Errorf("PodGroup %s controlled by %+v: only Trainer's may exist", pg.Name, o)
			}
		}
		var pvcs corev1.PersistentVolumeClaimList
		if err := c.List(ctx, &pvcs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(pvcs.Items) != 0 {
			t.Errorf("PVCs %v of a refused JobSet", names(pvcs.Items))
		}
		return ctx
	})
	testenv.Test(t, f)
}

// TestTrainersOwnGang: Trainer's podGroupPolicy alone (no podgroups annotation, and no stage
// order: Trainer's one PodGroup counts every pod of every ReplicatedJob), with volumeclaims'
// shared PVC. Trainer makes its PodGroup and labels the pods; podgroups makes none and leaves
// the label alone.
func TestTrainersOwnGang(t *testing.T) {
	f := framework.NamespacedFeature("Trainer: its own podGroupPolicy beside the add-ons", "Trainer's PodGroup, none of podgroups", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		const name = "own-gang"
		rt := runtime(t, ns, func(spec map[string]any) {
			coschedulingPolicy(spec)
			withoutAnnotations("podgroups.")(spec)
			rjs := spec["template"].(map[string]any)["spec"].(map[string]any)["replicatedJobs"].([]any)
			node := rjs[2].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)
			delete(node, "annotations") // no sequencer depends-on
		})
		tj := trainJob(ns, name, rt.GetName())
		create(ctx, t, c, rt, tj)
		waitTrainJob(ctx, t, c, tj, "Complete")

		pg := &coschedv1alpha1.PodGroup{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pg); err != nil {
			t.Fatalf("Trainer's PodGroup %s: %v", name, err)
		}
		if o := metav1.GetControllerOf(pg); o == nil || o.Kind != "TrainJob" || pg.Spec.MinMember != 4 {
			t.Errorf("PodGroup %s: controller %+v, minMember %d; want the TrainJob's, 4", name, o, pg.Spec.MinMember)
		}
		var pgs coschedv1alpha1.PodGroupList
		if err := c.List(ctx, &pgs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(pgs.Items) != 1 {
			t.Errorf("%d PodGroups, want Trainer's only", len(pgs.Items))
		}
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: name}); err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if got := p.Labels[contract.CoschedulingPodGroupLabelKey]; got != name {
				t.Errorf("pod %s pod-group %q, want Trainer's %q", p.Name, got, name)
			}
		}
		js := &jobsetv1alpha2.JobSet{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, js); err != nil {
			t.Fatal(err)
		}
		framework.WaitEventCounts(ctx, t, c, js, map[string]int{"VolumeClaimsCreated": 1, "PodGroupCreated": 0})
		return ctx
	})
	testenv.Test(t, f)
}

func names(pvcs []corev1.PersistentVolumeClaim) []string {
	var out []string
	for _, p := range pvcs {
		out = append(out, p.Name)
	}
	return out
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
