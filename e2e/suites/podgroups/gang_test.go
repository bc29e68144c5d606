package podgroups_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestGang: on nodes with room for 3 pods, a JobSet of 4 pods gets 3 bound without the add-on,
// and none with it (Volcano's scheduler, then coscheduling, then kube-scheduler itself through
// the Workload API); once room for 3 more is added, all 4 are bound together.
func TestGang(t *testing.T) {
	for _, s := range []contract.Scheduler{contract.SchedulerVolcano, contract.SchedulerCoscheduling, contract.SchedulerKubernetes} {
		f := framework.NamespacedFeature(fmt.Sprintf("%s: all of the gang or none of it", s), "gang", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if s == contract.SchedulerKubernetes {
				requireWorkloadAPI(t, cfg)
			}
			c := framework.Client(t, cfg)
			ns := framework.NamespaceFrom(ctx)
			addPoolNode(ctx, t, cfg, ns, ns+"-a", 3)

			// Without the add-on: the default scheduler binds what fits.
			plain := newJobSet(ns, "plain", "").ReplicatedJobs(onPool(replicated("w", 2, 2, "300s"), ns)).Obj()
			framework.CreateAll(ctx, t, c, plain)
			framework.Eventually(ctx, t, time.Minute, "3 of 4 plain pods bound", func(ctx context.Context) (bool, string, error) {
				ps := pods(ctx, t, c, ns, plain.Name)
				return len(ps) == 4 && bound(ps) == 3, fmt.Sprintf("%d pods, %d bound", len(ps), bound(ps)), nil
			})
			if err := c.Delete(ctx, plain, client.PropagationPolicy("Foreground")); err != nil {
				t.Fatal(err)
			}
			framework.Eventually(ctx, t, time.Minute, "plain pods gone", func(ctx context.Context) (bool, string, error) {
				n := len(pods(ctx, t, c, ns, plain.Name))
				return n == 0, fmt.Sprintf("%d pods", n), nil
			})

			// With it: none of 4 is bound where 3 fit.
			js := newJobSet(ns, "gang", s).ReplicatedJobs(onPool(replicated("w", 2, 2, "300s"), ns)).Obj()
			created := time.Now()
			framework.CreateAll(ctx, t, c, js)
			checkPodGroup(ctx, t, c, ns, "gang", s, 4)
			holdUnbound(ctx, t, c, ns, js.Name, 4, "only 3 of 4 fit", func(p *corev1.Pod) { checkPodNamesGang(t, p, s, "gang") })

			// Room for all: bound together.
			roomAt := time.Now()
			addPoolNode(ctx, t, cfg, ns, ns+"-b", 3)
			allBound := waitAllBound(ctx, t, c, ns, js.Name, 4, roomAt)
			var at []time.Time
			for _, p := range pods(ctx, t, c, ns, js.Name) {
				for _, cond := range p.Status.Conditions {
					if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionTrue {
						at = append(at, cond.LastTransitionTime.Time)
					}
				}
			}
			if len(at) == 4 {
				spread := slices.MaxFunc(at, time.Time.Compare).Sub(slices.MinFunc(at, time.Time.Compare))
				t.Logf("%s: 0 of 4 bound for 8 s with room for 3; room added %s after the JobSet's creation; all 4 seen bound %s after that (polled every 100ms), their PodScheduled times within %s of each other",
					s, roomAt.Sub(created).Round(time.Millisecond), allBound.Round(time.Millisecond), spread)
				if spread > 3*time.Second {
					t.Errorf("the gang's pods were bound %s apart; want together", spread)
				}
			}
			return ctx
		})
		testenv.Test(t, f)
	}
}

// checkPodGroup checks the PodGroup of a JobSet of pods of the suite's requests against a hand
// computation: minMember, minResources, and (Volcano) the default queue.
func checkPodGroup(ctx context.Context, t *testing.T, c client.Client, ns, name string, s contract.Scheduler, members int) {
	t.Helper()
	var got int32
	var res corev1.ResourceList
	var labels map[string]string
	switch s {
	case contract.SchedulerKubernetes:
		pg := nativePodGroup(ctx, t, c, ns, name)
		if got := minCount(pg.Spec.SchedulingPolicy); got != int32(members) {
			t.Errorf("PodGroup %s minCount = %d, want %d", name, got, members)
		}
		if ref := pg.Spec.WorkloadRef; ref == nil || ref.WorkloadName == "" || ref.TemplateName == "" {
			t.Errorf("PodGroup %s workloadRef = %+v", name, ref)
		} else {
			wl := workload(ctx, t, c, ns, ref.WorkloadName)
			if !slices.ContainsFunc(wl.Spec.PodGroupTemplates, func(tp schedulingv1beta1.PodGroupTemplate) bool { return tp.Name == ref.TemplateName }) {
				t.Errorf("Workload %s has no template %s: %+v", wl.Name, ref.TemplateName, wl.Spec.PodGroupTemplates)
			}
			if wl.Labels[contract.ManagedByLabelKey] != contract.PodGroupsManagedByValue || wl.Spec.ControllerRef == nil || wl.Spec.ControllerRef.Kind != "JobSet" {
				t.Errorf("Workload %s labels %v controllerRef %+v", wl.Name, wl.Labels, wl.Spec.ControllerRef)
			}
		}
		if pg.Labels[contract.ManagedByLabelKey] != contract.PodGroupsManagedByValue {
			t.Errorf("PodGroup %s labels %v: no managed-by", name, pg.Labels)
		}
		return // no minResources in the Workload API: kube-scheduler sums the pods itself
	case contract.SchedulerVolcano:
		pg := volcanoPodGroup(ctx, t, c, ns, name)
		got, labels = pg.Spec.MinMember, pg.Labels
		if pg.Spec.MinResources != nil {
			res = *pg.Spec.MinResources
		}
		if pg.Spec.Queue != "default" {
			t.Errorf("queue = %q, want default", pg.Spec.Queue)
		}
	default:
		pg := coschedPodGroup(ctx, t, c, ns, name)
		got, res, labels = pg.Spec.MinMember, pg.Spec.MinResources, pg.Labels
	}
	if got != int32(members) {
		t.Errorf("PodGroup %s minMember = %d, want %d", name, got, members)
	}
	expectResources(t, res, members)
	if labels[contract.ManagedByLabelKey] != contract.PodGroupsManagedByValue {
		t.Errorf("PodGroup %s labels %v: no managed-by", name, labels)
	}
}

// checkPodNamesGang checks that a pod names its gang and scheduler.
func checkPodNamesGang(t *testing.T, p *corev1.Pod, s contract.Scheduler, group string) {
	t.Helper()
	switch s {
	case contract.SchedulerVolcano:
		if got := p.Annotations[contract.VolcanoGroupNameAnnotationKey]; got != group {
			t.Errorf("pod %s group-name = %q, want %q", p.Name, got, group)
		}
		if p.Spec.SchedulerName != framework.VolcanoSchedulerName {
			t.Errorf("pod %s schedulerName = %q", p.Name, p.Spec.SchedulerName)
		}
	case contract.SchedulerCoscheduling:
		if got := p.Labels[contract.CoschedulingPodGroupLabelKey]; got != group {
			t.Errorf("pod %s pod-group = %q, want %q", p.Name, got, group)
		}
		if p.Spec.SchedulerName != framework.CoschedulingSchedulerName {
			t.Errorf("pod %s schedulerName = %q", p.Name, p.Spec.SchedulerName)
		}
	case contract.SchedulerKubernetes:
		if sg := p.Spec.SchedulingGroup; sg == nil || ptr.Deref(sg.PodGroupName, "") != group {
			t.Errorf("pod %s schedulingGroup = %+v, want podGroupName %q", p.Name, sg, group)
		}
		if p.Spec.SchedulerName != corev1.DefaultSchedulerName {
			t.Errorf("pod %s schedulerName = %q, want kube-scheduler's", p.Name, p.Spec.SchedulerName)
		}
	}
}

// TestVolcanoTaskMinimums: a Volcano JobSet of a launcher and workers gets a PodGroup that holds
// each ReplicatedJob whole (spec.minTaskMember: launcher 1, worker 4, beside minMember 5), and
// pods that name their task (volcano.sh/task-spec). While the launcher fits no node and the
// workers fit, none of the five is bound; once a node for the launcher is added, all five are
// bound together, which Volcano does only when each task's pods, counted under the names they
// carry, reach their minimum (a task name its pods did not carry would hold the gang for ever).
func TestVolcanoTaskMinimums(t *testing.T) {
	f := framework.NamespacedFeature("volcano: each ReplicatedJob whole", "gang", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		const launcherLabel = "podgroups-e2e/launcher"
		addPoolNode(ctx, t, cfg, ns, ns+"-workers", 8)

		launcher := onPool(replicated("launcher", 1, 1, "300s"), ns)
		launcher.PodSpec().NodeSelector[launcherLabel] = "true"
		js := newJobSet(ns, "mpi", contract.SchedulerVolcano).ReplicatedJobs(launcher, onPool(replicated("worker", 2, 2, "300s"), ns)).Obj()
		if w := framework.CreateWithWarnings(ctx, t, cfg, js); len(w) > 0 {
			t.Errorf("admission warnings %q: want none, every pod requests CPU and memory", w)
		}

		checkPodGroup(ctx, t, c, ns, "mpi", contract.SchedulerVolcano, 5)
		pg := volcanoPodGroup(ctx, t, c, ns, "mpi")
		if want := map[string]int32{"launcher": 1, "worker": 4}; !maps.Equal(pg.Spec.MinTaskMember, want) {
			t.Errorf("PodGroup mpi minTaskMember = %v, want %v", pg.Spec.MinTaskMember, want)
		}
		holdUnbound(ctx, t, c, ns, js.Name, 5, "the launcher fits no node", func(p *corev1.Pod) {
			checkPodNamesGang(t, p, contract.SchedulerVolcano, "mpi")
			if want := p.Labels[contract.ReplicatedJobNameLabelKey]; p.Annotations[contract.VolcanoTaskSpecAnnotationKey] != want {
				t.Errorf("pod %s task-spec = %q, want its ReplicatedJob %q", p.Name, p.Annotations[contract.VolcanoTaskSpecAnnotationKey], want)
			}
		})

		roomAt := time.Now()
		// Room for the workers too: Volcano may put some there first.
		addPoolNodeLabelled(ctx, t, cfg, ns, ns+"-launcher", 5, map[string]string{launcherLabel: "true"})
		t.Logf("volcano: 0 of 5 bound for 8 s while the launcher fit no node; all 5 bound %s after a node for it was added",
			waitAllBound(ctx, t, c, ns, js.Name, 5, roomAt).Round(time.Millisecond))
		return ctx
	})
	// Volcano counts a pod that requests nothing as placed before it is (for minMember and
	// minTaskMember alike): such a launcher that fits no node does not hold its workers back.
	// The JobSet is warned of at admission, and what the Warning says is what happens.
	requestless := framework.NamespacedFeature("volcano: a launcher that requests nothing", "warned", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		addPoolNode(ctx, t, cfg, ns, ns+"-workers", 8)
		launcher := onPool(replicated("launcher", 1, 1, "300s"), ns)
		launcher.PodSpec().NodeSelector["podgroups-e2e/launcher"] = "true"
		for _, cs := range [][]corev1.Container{launcher.PodSpec().InitContainers, launcher.PodSpec().Containers} {
			for i := range cs {
				cs[i].Resources = corev1.ResourceRequirements{}
			}
		}
		js := newJobSet(ns, "mpi", contract.SchedulerVolcano).ReplicatedJobs(launcher, onPool(replicated("worker", 2, 2, "300s"), ns)).Obj()
		w := framework.CreateWithWarnings(ctx, t, cfg, js)
		if !slices.ContainsFunc(w, func(w string) bool {
			return strings.Contains(w, "spec.replicatedJobs[launcher]") && strings.Contains(w, "Volcano counts such a pod as placed before it is")
		}) {
			t.Errorf("admission warnings %q: want one naming ReplicatedJob launcher", w)
		}
		framework.Eventually(ctx, t, time.Minute, "the 4 workers bound, the launcher not", func(ctx context.Context) (bool, string, error) {
			ps := pods(ctx, t, c, ns, js.Name)
			launcherBound := slices.ContainsFunc(ps, func(p corev1.Pod) bool {
				return p.Labels[contract.ReplicatedJobNameLabelKey] == "launcher" && p.Spec.NodeName != ""
			})
			return len(ps) == 5 && bound(ps) == 4 && !launcherBound, fmt.Sprintf("%d pods, %d bound, the launcher bound: %t", len(ps), bound(ps), launcherBound), nil
		})
		return ctx
	})
	testenv.Test(t, f, requestless)
}
