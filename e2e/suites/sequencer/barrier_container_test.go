package sequencer_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// The barrier container under the namespace's rules: a ResourceQuota that asks for limits, a
// LimitRange whose min is above the barrier's, Pod Security restricted, and a pod template the
// API server refuses for good.

// limited gives every container of rj requests and limits of cpu and memory.
func limited(rj *addontest.ReplicatedJobWrapper, cpu, memory string) *addontest.ReplicatedJobWrapper {
	for i := range rj.PodSpec().Containers {
		list := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
		rj.PodSpec().Containers[i].Resources = corev1.ResourceRequirements{Requests: list, Limits: list.DeepCopy()}
	}
	return rj
}

// TestBarrierUnderQuota: a ResourceQuota with limits.cpu and limits.memory and no LimitRange
// default, user containers that set requests and limits: the barrier container has limits too,
// so the pods are created and the JobSet completes.
func TestBarrierUnderQuota(t *testing.T) {
	f := framework.NamespacedFeature("a start barrier under a quota that asks for limits", "the pods are created and the JobSet completes", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		framework.LimitsQuota(ctx, t, c, ns)
		js := withBarrier(addontest.JobSet(ns, "quota"), contract.StartBarrierJobSet, "60s").
			ReplicatedJobs(limited(replicated("w", 2, 1, "1s"), "100m", "64Mi")).Obj()
		framework.CreateAll(ctx, t, c, js)
		waitFinished(ctx, t, c, js)
		return ctx
	})
	testenv.Test(t, f)
}

// TestBarrierLimitRangeRefused: a LimitRange whose min CPU is above the barrier container's
// request. Admission warns, naming the barrier container and the LimitRange's cause (a dry run
// of the pod); the JobSet is admitted, its Jobs cannot create their pods, and within 30 s the
// sequencer says so on the JobSet, once (PodsRefused), and kubectl jobset-addons status shows it.
func TestBarrierLimitRangeRefused(t *testing.T) {
	f := framework.NamespacedFeature("a start barrier under a LimitRange whose min is above it", "a Warning at admission, then PodsRefused on the JobSet", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "min"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer, Min: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		}}}}
		framework.CreateAll(ctx, t, c, lr)
		js := withBarrier(addontest.JobSet(ns, "min"), contract.StartBarrierJobSet, "60s").
			ReplicatedJobs(limited(replicated("w", 1, 1, "1s"), "200m", "64Mi")).Obj()
		warnings := framework.CreateWithWarnings(ctx, t, cfg, js)
		if !containsAll(warnings, contract.StartBarrierContainerName, "minimum cpu usage per Container is 100m") {
			t.Errorf("admission warnings %q: want one naming the barrier container and the LimitRange's minimum", warnings)
		}
		framework.ExpectPodsRefused(ctx, t, cfg, c, js, contract.StartBarrierContainerName, "minimum cpu usage per Container is 100m", "Job min-w-0")
		return ctx
	})
	testenv.Test(t, f)
}

func containsAll(list []string, subs ...string) bool {
	for _, s := range list {
		ok := true
		for _, sub := range subs {
			ok = ok && strings.Contains(s, sub)
		}
		if ok {
			return true
		}
	}
	return false
}

// restrictedContainers makes every container of rj compliant with Pod Security restricted.
func restrictedContainers(rj *addontest.ReplicatedJobWrapper) *addontest.ReplicatedJobWrapper {
	framework.RestrictedPodSpec(rj.PodSpec())
	return rj
}

// TestBarrierPodSecurity: in a namespace that enforces Pod Security restricted, a barrier JobSet
// whose own containers comply completes, without a Warning at admission; one whose containers
// do not is warned of at admission (the dry run), naming the cause. In a baseline namespace, a
// pod that runs as root (pod securityContext runAsUser 0) gets a barrier container that runs as
// its own non-root user, and completes.
func TestBarrierPodSecurity(t *testing.T) {
	restricted := framework.NamespacedFeature("a start barrier in a restricted namespace", "compliant containers complete; others are warned of", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		framework.EnforcePodSecurity(ctx, t, c, ns, "restricted")
		js := withBarrier(addontest.JobSet(ns, "restricted"), contract.StartBarrierJobSet, "60s").
			ReplicatedJobs(restrictedContainers(replicated("w", 2, 1, "1s"))).Obj()
		if w := framework.CreateWithWarnings(ctx, t, cfg, js); containsAll(w, "PodSecurity") {
			t.Errorf("admission warnings %q for compliant containers", w)
		}
		waitFinished(ctx, t, c, js)
		other := withBarrier(addontest.JobSet(ns, "privileged"), contract.StartBarrierJobSet, "60s").
			ReplicatedJobs(replicated("w", 1, 1, "1s")).Obj()
		if w := framework.CreateWithWarnings(ctx, t, cfg, other); !containsAll(w, contract.StartBarrierContainerName, `violates PodSecurity "restricted`) {
			t.Errorf("admission warnings %q: want one naming the barrier container and Pod Security", w)
		}
		return ctx
	})
	root := framework.NamespacedFeature("a start barrier on root pods in a baseline namespace", "the barrier runs as its own user and the JobSet completes", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		framework.EnforcePodSecurity(ctx, t, c, ns, "baseline")
		rj := replicated("w", 2, 1, "1s")
		rj.PodSpec().SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0), RunAsNonRoot: ptr.To(false)}
		js := withBarrier(addontest.JobSet(ns, "root"), contract.StartBarrierJobSet, "60s").ReplicatedJobs(rj).Obj()
		framework.CreateAll(ctx, t, c, js)
		waitFinished(ctx, t, c, js)
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil || len(pods.Items) == 0 {
			t.Fatalf("pods: %v (%d)", err, len(pods.Items))
		}
		for _, p := range pods.Items {
			for _, ic := range p.Spec.InitContainers {
				if ic.Name == contract.StartBarrierContainerName && (ic.SecurityContext == nil || ptr.Deref(ic.SecurityContext.RunAsUser, 0) == 0) {
					t.Errorf("pod %s: the barrier container runs as the pod's user (root): %+v", p.Name, ic.SecurityContext)
				}
			}
		}
		return ctx
	})
	testenv.Test(t, restricted, root)
}

// TestBarrierPodRefusedForGood: a pod template whose pods the API server refuses for good
// (a container's CPU request above its limit), which JobSet's own validation admits: the
// sequencer's dry run of the barrier pod refuses the JobSet, naming the field in it.
func TestBarrierPodRefusedForGood(t *testing.T) {
	f := framework.NamespacedFeature("a barrier JobSet whose pods are invalid", "refused at admission, naming the field", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		rj := replicated("w", 1, 1, "1s")
		rj.PodSpec().Containers[0].Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		}
		js := withBarrier(addontest.JobSet(framework.NamespaceFrom(ctx), "invalid"), contract.StartBarrierJobSet, "").ReplicatedJobs(rj).Obj()
		framework.ExpectRefusedAt(ctx, t, c, js, "vjobset.sequencer.jobset-addons.io",
			[]string{"spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.requests"})
		return ctx
	})
	testenv.Test(t, f)
}
