package kind_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/kindbed"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// The barrier container on real kubelets, whatever the pod says: pods that run as root, and a
// ResourceQuota that asks for limits.

// barrierJobSet is a JobSet of 1 Job x 2 pods, each running `true` in busybox, with a start
// barrier of timeout 60 s; change changes its pod spec.
func barrierJobSet(ns, name string, change func(*corev1.PodSpec)) *jobsetv1alpha2.JobSet {
	rj := kindbed.ReplicatedJob("w", 1, 2, "true")
	change(&rj.Template.Spec.Template.Spec)
	return kindbed.JobSet(ns, name, map[string]string{
		contract.StartBarrierAnnotationKey:        string(contract.StartBarrierJobSet),
		contract.StartBarrierTimeoutAnnotationKey: "60s",
	}, 0, rj)
}

// waitCompleted waits up to 3 minutes for js to complete, failing at once if it fails, and
// reports the pods' states when it does not.
func waitCompleted(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet) {
	t.Helper()
	framework.Eventually(ctx, t, 3*time.Minute, "JobSet "+js.Name+" Completed", func(ctx context.Context) (bool, string, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
			return false, err.Error(), nil
		}
		for _, cond := range js.Status.Conditions {
			if cond.Status == metav1.ConditionTrue && cond.Type == string(jobsetv1alpha2.JobSetFailed) {
				return false, "", fmt.Errorf("JobSet failed: %s", cond.Message)
			}
			if cond.Status == metav1.ConditionTrue && cond.Type == string(jobsetv1alpha2.JobSetCompleted) {
				return true, "", nil
			}
		}
		var states []string
		for _, p := range pods(ctx, t, c, js) {
			for _, s := range p.Status.InitContainerStatuses {
				if s.State.Waiting != nil {
					states = append(states, p.Name+" "+s.Name+" "+s.State.Waiting.Reason+": "+s.State.Waiting.Message)
				}
			}
		}
		return false, fmt.Sprint(states), nil
	})
}

// TestBarrierRootPods: two pods whose pod securityContext says runAsUser 0 (root, as many ML
// images run) with a start barrier: the barrier container runs as its own non-root user, the
// kubelet accepts it, and the JobSet completes (it stayed in Init:CreateContainerConfigError,
// "container's runAsUser breaks non-root policy", when the barrier had no user of its own).
func TestBarrierRootPods(t *testing.T) {
	f := framework.NamespacedFeature("start barrier on root pods", "the barrier runs as its own user and the JobSet completes", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		js := barrierJobSet(framework.NamespaceFrom(ctx), "root", func(spec *corev1.PodSpec) {
			spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0), RunAsGroup: ptr.To[int64](0), FSGroup: ptr.To[int64](2000)}
		})
		framework.CreateAll(ctx, t, c, js)
		waitCompleted(ctx, t, c, js)
		return ctx
	})
	testenv.Test(t, f)
}

// TestBarrierQuotaLimits: a ResourceQuota with limits.cpu and limits.memory, no LimitRange
// default, the user's containers with requests and limits: the barrier container has limits
// too, so the pods are created and the JobSet completes ("failed quota: must specify limits.cpu
// for: jobset-addons-start-barrier" for ever, before).
func TestBarrierQuotaLimits(t *testing.T) {
	f := framework.NamespacedFeature("start barrier under a quota", "the pods are created and the JobSet completes", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		framework.LimitsQuota(ctx, t, c, ns)
		js := barrierJobSet(ns, "quota", func(spec *corev1.PodSpec) {
			list := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("32Mi")}
			spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: list, Limits: list.DeepCopy()}
		})
		framework.CreateAll(ctx, t, c, js)
		waitCompleted(ctx, t, c, js)
		return ctx
	})
	testenv.Test(t, f)
}

// TestBarrierRestrictedNamespace: a namespace that enforces Pod Security restricted, a barrier
// JobSet whose own containers comply: the API server admits its pods (the barrier container
// complies too: its own non-root user, seccomp RuntimeDefault, no capabilities, no privilege
// escalation), the real kubelets run them, the barrier opens (the JobSet records it) and the
// JobSet completes.
func TestBarrierRestrictedNamespace(t *testing.T) {
	f := framework.NamespacedFeature("start barrier in a restricted namespace", "the pods are admitted, the barrier opens and the JobSet completes", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		framework.EnforcePodSecurity(ctx, t, c, ns, "restricted")
		js := barrierJobSet(ns, "restricted", framework.RestrictedPodSpec)
		framework.CreateAll(ctx, t, c, js)
		waitCompleted(ctx, t, c, js)
		if _, ok := js.Annotations[contract.StartBarrierOpenedAnnotationKey]; !ok {
			t.Errorf("the JobSet completed without the record of its barrier opened: %v", js.Annotations)
		}
		return ctx
	})
	testenv.Test(t, f)
}
