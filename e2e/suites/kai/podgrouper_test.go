package kai_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// grouperLabel is the pod label KAI's pod grouper is told to group (its --pod-label-selector,
// KAI's global.podLabelSelector), as docs/podgroups.md tells users to set it up beside
// podgroups: JobSet pods never carry it.
const grouperLabel, grouperValue = "kai.scheduler/grouper", "enabled"

// TestPodGrouperBeside: with KAI's pod grouper running as docs/podgroups.md says, a plain Job
// that carries the grouper's label is grouped by it (a PodGroup of KAI's making, its pod bound),
// and a KAI JobSet keeps podgroups' gang: its pods still name it, none is bound where 3 of 4
// fit, and all 4 are bound together once they do.
func TestPodGrouperBeside(t *testing.T) {
	f := framework.NamespacedFeature("kai: gangs survive KAI's pod grouper set up as the docs say", "podgrouper", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		tb, err := framework.DefaultConfig()
		if err != nil {
			t.Fatal(err)
		}
		opts := framework.KAIOptions{PodGrouper: true, PodGrouperArgs: []string{fmt.Sprintf("--pod-label-selector=%s=%s", grouperLabel, grouperValue)}}
		if err := framework.StartKAI(ctx, tb, opts, func(format string, args ...any) { fmt.Fprintf(os.Stderr, "testbed: "+format+"\n", args...) }); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = framework.StopKAIPodGrouper(tb) })
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		poolNode(ctx, t, cfg, ns, ns+"-a", 3)

		// A Job KAI's pod grouper groups: its pod gets a PodGroup of KAI's and is bound.
		labels := map[string]string{grouperLabel: grouperValue, contract.KAIQueueLabelKey: framework.KAIDefaultQueue}
		pod := replicated("job", 1, 1, "300s").Obj().Template.Spec.Template
		pod.Labels = labels
		pod.Spec.SchedulerName = framework.KAISchedulerName
		pod.Spec.NodeSelector = map[string]string{poolLabel: ns}
		pod.Spec.Tolerations = []corev1.Toleration{{Key: poolLabel, Operator: corev1.TolerationOpEqual, Value: ns, Effect: corev1.TaintEffectNoSchedule}}
		pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "grouped", Labels: labels},
			Spec:       batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: pod},
		}
		framework.CreateAll(ctx, t, c, job)
		framework.Eventually(ctx, t, 90*time.Second, "the grouped Job's pod bound", func(ctx context.Context) (bool, string, error) {
			var l corev1.PodList
			if err := c.List(ctx, &l, client.InNamespace(ns), client.MatchingLabels{"batch.kubernetes.io/job-name": job.Name}); err != nil {
				return false, err.Error(), nil
			}
			if len(l.Items) != 1 {
				return false, fmt.Sprintf("%d pods", len(l.Items)), nil
			}
			p := l.Items[0]
			return p.Spec.NodeName != "" && p.Annotations[contract.KAIPodGroupAnnotationKey] != "",
				fmt.Sprintf("node %q, pod-group-name %q", p.Spec.NodeName, p.Annotations[contract.KAIPodGroupAnnotationKey]), nil
		})

		// A KAI JobSet beside it, 4 pods where 2 more fit: none bound, its pods still name its gang.
		js := kaiJobSet(ns, "gang").ReplicatedJobs(inPool(replicated("w", 2, 2, "300s"), ns)).Obj()
		framework.CreateAll(ctx, t, c, js)
		name := "gang." + ns
		podGroup(ctx, t, c, ns, name)
		checkPods(t, noneBound(ctx, t, c, ns, js.Name, 4, "only 2 of 4 fit"), name, framework.KAIDefaultQueue)
		if names, err := podGroupNames(ctx, c, ns, js.Name); err != nil || len(names) != 1 || names[0] != name {
			t.Errorf("the JobSet's PodGroups: %v (%v), want [%s]", names, err, name)
		}
		poolNode(ctx, t, cfg, ns, ns+"-b", 3)
		spread := allBound(ctx, t, c, ns, js.Name, 4)
		ps, _ := jobSetPods(ctx, t, c, ns, js.Name)
		checkPods(t, ps, name, framework.KAIDefaultQueue)
		t.Logf("beside the pod grouper: all 4 bound together (within %s), each still naming %s", spread, name)
		return ctx
	})
	testenv.Test(t, f)
}
