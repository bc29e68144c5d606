package kueue_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// The device quota of TestDeviceQuota: a DeviceClass of its own whose one ResourceSlice has
// quotaSliceDevices devices, and the logical resource Kueue's Configuration maps it to
// (framework.KueueOptions.DeviceClassMappings), which a ClusterQueue gives a quota.
const (
	quotaClass        = "quota.kueue.testbed.jobset-addons.io"
	quotaDevice       = "testbed.jobset-addons.io/device"
	quotaSliceDevices = 2
)

// warnings records the admission Warnings a client was given.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(code int, agent, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

// deviceJobSet is a JobSet of one ReplicatedJob train (one Job of two pods, one CPU each, running
// run) that gets one device of quotaClass through resourceclaims: one claim for the Job, shared by
// its two pods.
func deviceJobSet(ns, name, queue, run string) *jobsetv1alpha2.JobSet {
	return addontest.JobSet(ns, name).Label(queueNameLabel, queue).ReplicatedJobs(
		addontest.ReplicatedJob("train").Pods(2).Requests("1", "").PodAnnotation(framework.DelayAnnotationKey, run).
			JobAnnotation(contract.TemplatesAnnotationKey, `- metadata: {name: dev}
  spec: {devices: {requests: [{name: dev, exactly: {deviceClassName: `+quotaClass+`}}]}}
`),
	).Obj()
}

// deviceUsage is what Kueue counted of quotaDevice: in the Workload's admission (every pod set),
// and in the ClusterQueue's flavorsUsage. found says whether the resource appears at all.
func deviceUsage(u *unstructured.Unstructured, clusterQueue bool) (total string, found bool) {
	if clusterQueue {
		flavors, _, _ := unstructured.NestedSlice(u.Object, "status", "flavorsUsage")
		for _, f := range flavors {
			res, _, _ := unstructured.NestedSlice(f.(map[string]any), "resources")
			for _, r := range res {
				m := r.(map[string]any)
				if m["name"] == quotaDevice {
					return fmt.Sprint(m["total"]), true
				}
			}
		}
		return "0", false
	}
	psas, _, _ := unstructured.NestedSlice(u.Object, "status", "admission", "podSetAssignments")
	for _, psa := range psas {
		if q, ok, _ := unstructured.NestedString(psa.(map[string]any), "resourceUsage", quotaDevice); ok {
			return q, true
		}
	}
	return "0", false
}

// TestDeviceQuota: a ClusterQueue whose device quota holds two Jobs' claims (and whose
// ResourceSlice has two devices), and three JobSets, each one Job of two pods sharing one claim
// made by resourceclaims. What Kueue counts is measured, not assumed: Kueue builds its Workload
// from the JobSet's pod templates, which name no claim (resourceclaims adds it to each Job when
// the Job is created), so it charges no device, admits all three, and the third waits in the
// scheduler (its claim unallocatable) instead of in Kueue. resourceclaims says so at admission:
// each create returns its Warning (docs/install.md). A control JobSet with a
// ResourceClaimTemplate in its pod template shows that Kueue's device mapping is live (v0.18 and
// later, where KueueDRAIntegration is on): that device is charged.
func TestDeviceQuota(t *testing.T) {
	testenv.Test(t, feature("device quota", "Kueue charges no device for resourceclaims' claims; the Warning says so; the third JobSet waits in the scheduler",
		func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := framework.Client(t, cfg)
			ns := framework.NamespaceFrom(ctx)
			rc := rest.CopyConfig(cfg.Client().RESTConfig())
			rc.QPS, rc.Burst = 100, 200
			w := &warnings{}
			rc.WarningHandler = w
			wc, err := client.New(rc, client.Options{Scheme: framework.Scheme})
			if err != nil {
				t.Fatal(err)
			}
			slice := &resourcev1.ResourceSlice{
				ObjectMeta: metav1.ObjectMeta{Name: "kueue-quota-" + ns},
				Spec: resourcev1.ResourceSliceSpec{Driver: quotaClass, AllNodes: ptr.To(true),
					Pool: resourcev1.ResourcePool{Name: "kueue-quota-" + ns, ResourceSliceCount: 1}},
			}
			for d := range quotaSliceDevices {
				slice.Spec.Devices = append(slice.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("q%d", d)})
			}
			class := &resourcev1.DeviceClass{
				ObjectMeta: metav1.ObjectMeta{Name: quotaClass},
				Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
					CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "` + quotaClass + `"`}}}},
			}
			framework.CreateAll(ctx, t, c, class, slice)
			t.Cleanup(func() {
				for _, o := range []client.Object{slice, class} {
					_ = client.IgnoreNotFound(c.Delete(context.Background(), o))
				}
			})
			q := makeQueues(ctx, t, c, ns, queueOptions{cpu: "10", devices: fmt.Sprint(quotaSliceDevices)})

			var sets []*jobsetv1alpha2.JobSet
			for i, run := range []string{"25s", "25s", "2s"} {
				js := deviceJobSet(ns, fmt.Sprintf("dev-%d", i), q.localQueue, run)
				if err := wc.Create(ctx, js); err != nil {
					t.Fatalf("creating JobSet %s: %v", js.Name, err)
				}
				got := w.take()
				if !slices.ContainsFunc(got, func(m string) bool {
					return strings.Contains(m, "resourceclaims: Kueue does not count the devices of the claims made for ReplicatedJobs train") &&
						strings.Contains(m, `LocalQueue "lq"`)
				}) {
					t.Errorf("JobSet %s: admission warnings %q, want resourceclaims' Kueue warning", js.Name, got)
				} else if i == 0 {
					t.Logf("admission Warning: %s", got[0])
				}
				sets = append(sets, js)
				if i < 2 {
					// Its claim allocated before the next JobSet exists, so that the third is
					// the one whose claim finds no device.
					waitWorkload(ctx, t, c, js, "Admitted", time.Minute)
					framework.Eventually(ctx, t, time.Minute, js.Name+"'s claim allocated", func(ctx context.Context) (bool, string, error) {
						cls, err := claims(ctx, c, js)
						if err != nil || len(cls) != 1 {
							return false, fmt.Sprint(len(cls), " claims ", err), nil
						}
						for _, cl := range cls {
							return cl.Status.Allocation != nil, "claim " + cl.Name + " not allocated", nil
						}
						return false, "", nil
					})
				}
			}

			// Kueue admits all three: it charged no device.
			for _, js := range sets {
				wl := waitWorkload(ctx, t, c, js, "Admitted", time.Minute)
				used, found := deviceUsage(wl, false)
				t.Logf("Workload %s of %s: %s counted %s (present: %v)", wl.GetName(), js.Name, quotaDevice, used, found)
				if found && used != "0" {
					t.Errorf("Workload of %s charged %s %s: Kueue counted the claims (update the Warning and docs/install.md)", js.Name, used, quotaDevice)
				}
			}
			// The ClusterQueue's status follows the admissions a moment later.
			var used, cpu string
			var admitted int64
			framework.Eventually(ctx, t, 30*time.Second, "the ClusterQueue's status counting the three", func(ctx context.Context) (bool, string, error) {
				cq := &unstructured.Unstructured{}
				cq.SetGroupVersionKind(framework.KueueGVR("clusterqueues").GroupVersion().WithKind("ClusterQueue"))
				if err := c.Get(ctx, client.ObjectKey{Name: q.clusterQueue}, cq); err != nil {
					return false, err.Error(), nil
				}
				used, _ = deviceUsage(cq, true)
				flavors, _, _ := unstructured.NestedSlice(cq.Object, "status", "flavorsUsage")
				for _, f := range flavors {
					res, _, _ := unstructured.NestedSlice(f.(map[string]any), "resources")
					for _, r := range res {
						if m := r.(map[string]any); m["name"] == "cpu" {
							cpu = fmt.Sprint(m["total"])
						}
					}
				}
				admitted, _, _ = unstructured.NestedInt64(cq.Object, "status", "admittedWorkloads")
				return admitted == 3, fmt.Sprintf("%d admitted workloads, cpu %s, %s %s", admitted, cpu, quotaDevice, used), nil
			})
			t.Logf("ClusterQueue %s: %d admitted workloads, cpu used %s of 10, %s used %s of %d", q.clusterQueue, admitted, cpu, quotaDevice, used, quotaSliceDevices)
			if used != "0" {
				t.Errorf("ClusterQueue charged %s %s: Kueue counted the claims (update the Warning and docs/install.md)", used, quotaDevice)
			}

			// Two claims allocated, the third JobSet's pods wait in the scheduler.
			framework.Eventually(ctx, t, time.Minute, "two claims allocated, dev-2's pods unschedulable", func(ctx context.Context) (bool, string, error) {
				allocated := 0
				for _, js := range sets {
					cls, err := claims(ctx, c, js)
					if err != nil {
						return false, err.Error(), nil
					}
					for _, cl := range cls {
						if cl.Status.Allocation != nil {
							allocated++
						}
					}
				}
				ps, err := pods(ctx, c, sets[2])
				if err != nil {
					return false, err.Error(), nil
				}
				waiting := 0
				var why string
				for _, p := range ps {
					for _, cond := range p.Status.Conditions {
						if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
							waiting++
							why = cond.Message
						}
					}
				}
				if allocated > quotaSliceDevices {
					return false, "", fmt.Errorf("%d claims allocated from %d devices", allocated, quotaSliceDevices)
				}
				if allocated == quotaSliceDevices && waiting == 2 {
					t.Logf("dev-2 admitted by Kueue, its 2 pods unschedulable: %s", why)
					return true, "", nil
				}
				return false, fmt.Sprintf("%d claims allocated, %d of dev-2's pods unschedulable", allocated, waiting), nil
			})
			// The first two finish, their claims go with their Jobs, and the third runs.
			for _, js := range sets {
				jobSetDone(ctx, t, c, js, 2*time.Minute)
			}

			// The control: a ResourceClaimTemplate in the pod template, which Kueue counts (per pod).
			if v := tb.KueueVersion(); strings.HasPrefix(v, "v0.17.") {
				t.Logf("Kueue %s: its DRA integration is off by default; no control", v)
				return ctx
			}
			rct := &resourcev1.ResourceClaimTemplate{
				ObjectMeta: metav1.ObjectMeta{Name: "dev", Namespace: ns},
				Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
					Requests: []resourcev1.DeviceRequest{{Name: "dev", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: quotaClass}}}}}},
			}
			framework.CreateAll(ctx, t, c, rct)
			native := deviceJobSet(ns, "native", q.localQueue, "1s")
			delete(native.Spec.ReplicatedJobs[0].Template.Annotations, contract.TemplatesAnnotationKey)
			native.Spec.ReplicatedJobs[0].Template.Spec.Parallelism = ptr.To[int32](1)
			native.Spec.ReplicatedJobs[0].Template.Spec.Completions = ptr.To[int32](1)
			pod := &native.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec
			pod.ResourceClaims = []corev1.PodResourceClaim{{Name: "dev", ResourceClaimTemplateName: ptr.To("dev")}}
			pod.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "dev"}}
			framework.CreateAll(ctx, t, c, native)
			wl := waitWorkload(ctx, t, c, native, "Admitted", time.Minute)
			nativeUsed, _ := deviceUsage(wl, false)
			t.Logf("control: Workload of a JobSet with a ResourceClaimTemplate in its pod template (1 pod): %s counted %s", quotaDevice, nativeUsed)
			if nativeUsed != "1" {
				t.Errorf("control: Kueue counted %s %s for one pod's ResourceClaimTemplate, want 1: the device mapping is not in effect, so the measurement above proves nothing", nativeUsed, quotaDevice)
			}
			jobSetDone(ctx, t, c, native, time.Minute)
			return ctx
		}))
}
