package testbed_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
)

func podSpec() corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{
			Name:  "main",
			Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("100m"),
			}},
		}},
	}
}

func TestJobSetCompletes(t *testing.T) {
	f := features.New("a JobSet of 2 ReplicatedJobs (replicas 2, parallelism 2) reaches Completed").
		WithSetup("namespace", framework.Namespace).
		Assess("completed", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := framework.Client(t, cfg)
			ns := framework.NamespaceFrom(ctx)
			rjob := func(name string) *addontest.ReplicatedJobWrapper {
				return addontest.ReplicatedJob(name).Replicas(2).Pods(2).CompletionMode(nil).BackoffLimit(nil).Requests("100m", "")
			}
			js := addontest.JobSet(ns, "two-by-two").ReplicatedJobs(rjob("leader"), rjob("workers")).Obj()
			if err := c.Create(ctx, js); err != nil {
				t.Fatalf("creating JobSet: %v", err)
			}
			start := time.Now()
			framework.Eventually(ctx, t, 2*time.Minute, "JobSet Completed", func(ctx context.Context) (bool, string, error) {
				if err := c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
					return false, err.Error(), nil
				}
				if apimeta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetFailed)) {
					return false, "", fmt.Errorf("JobSet failed: %+v", js.Status.Conditions)
				}
				return apimeta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetCompleted)),
					fmt.Sprintf("%+v", js.Status.ReplicatedJobsStatus), nil
			})
			t.Logf("JobSet 2x2x2 completed in %s", time.Since(start).Round(time.Millisecond))
			var pods corev1.PodList
			if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{jobsetv1alpha2.JobSetNameKey: js.Name}); err != nil {
				t.Fatal(err)
			}
			succeeded := 0
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodSucceeded {
					succeeded++
				}
			}
			if succeeded != 8 {
				t.Errorf("succeeded pods = %d, want 8 (2 ReplicatedJobs x 2 Jobs x 2 completions)", succeeded)
			}
			return ctx
		}).
		Teardown(framework.DeleteNamespace).Feature()
	testenv.Test(t, f)
}

func TestVolumeBinds(t *testing.T) {
	f := features.New("a PVC of class standard binds, and a pod mounting it runs").
		WithSetup("namespace", framework.Namespace).
		Assess("bound and running", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := framework.Client(t, cfg)
			ns := framework.NamespaceFrom(ctx)
			pvc := &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
				Spec: corev1.PersistentVolumeClaimSpec{
					StorageClassName: ptr.To("standard"),
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceStorage: resource.MustParse("1Gi"),
					}},
				},
			}
			if err := c.Create(ctx, pvc); err != nil {
				t.Fatal(err)
			}
			spec := podSpec()
			spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"},
			}}}
			spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "mounts-data", Namespace: ns}, Spec: spec}
			if err := c.Create(ctx, pod); err != nil {
				t.Fatal(err)
			}
			framework.Eventually(ctx, t, time.Minute, "PVC Bound", func(ctx context.Context) (bool, string, error) {
				err := c.Get(ctx, client.ObjectKeyFromObject(pvc), pvc)
				return err == nil && pvc.Status.Phase == corev1.ClaimBound, string(pvc.Status.Phase), nil
			})
			var pv corev1.PersistentVolume
			if err := c.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, &pv); err != nil {
				t.Fatal(err)
			}
			if pv.Spec.HostPath == nil {
				t.Errorf("PV %s is not a hostPath volume: %+v", pv.Name, pv.Spec.PersistentVolumeSource)
			}
			framework.WaitPodRunning(ctx, t, c, pod)
			return ctx
		}).
		Teardown(framework.DeleteNamespace).Feature()
	testenv.Test(t, f)
}

func TestResourceClaimAllocated(t *testing.T) {
	const driver = "gpu.testbed.jobset-addons.io"
	class := &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "testbed-gpu"},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", driver)},
		}}},
	}
	slice := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "testbed-gpu-kwok-node-1"},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   driver,
			NodeName: ptr.To("kwok-node-1"),
			Pool:     resourcev1.ResourcePool{Name: "kwok-node-1", ResourceSliceCount: 1},
			Devices:  []resourcev1.Device{{Name: "gpu-0"}, {Name: "gpu-1"}},
		},
	}
	f := features.New("a ResourceClaim is allocated from a DeviceClass and a published ResourceSlice, and its pod runs").
		WithSetup("namespace", framework.Namespace).
		WithSetup("device class and slice", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := framework.Client(t, cfg)
			for _, o := range []client.Object{class, slice} {
				if err := c.Create(ctx, o); err != nil {
					t.Fatal(err)
				}
			}
			return ctx
		}).
		Assess("allocated and running", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := framework.Client(t, cfg)
			ns := framework.NamespaceFrom(ctx)
			claim := &resourcev1.ResourceClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: ns},
				Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
					Name:    "gpu",
					Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class.Name, Count: 2, AllocationMode: resourcev1.DeviceAllocationModeExactCount},
				}}}},
			}
			if err := c.Create(ctx, claim); err != nil {
				t.Fatal(err)
			}
			spec := podSpec()
			spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpu")}}
			spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "uses-gpu", Namespace: ns}, Spec: spec}
			if err := c.Create(ctx, pod); err != nil {
				t.Fatal(err)
			}
			framework.WaitPodRunning(ctx, t, c, pod)
			if pod.Spec.NodeName != "kwok-node-1" {
				t.Errorf("pod ran on %q, want kwok-node-1, the only node with devices", pod.Spec.NodeName)
			}
			if err := c.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
				t.Fatal(err)
			}
			if claim.Status.Allocation == nil || len(claim.Status.Allocation.Devices.Results) != 2 {
				t.Fatalf("claim allocation = %+v, want 2 devices", claim.Status.Allocation)
			}
			if len(claim.Status.ReservedFor) != 1 || claim.Status.ReservedFor[0].Name != pod.Name {
				t.Errorf("claim reservedFor = %+v, want the pod", claim.Status.ReservedFor)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := framework.Client(t, cfg)
			for _, o := range []client.Object{slice, class} {
				if err := c.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
					t.Error(err)
				}
			}
			return ctx
		}).
		Teardown(framework.DeleteNamespace).Feature()
	testenv.Test(t, f)
}

func TestJobDeletionCollectsPods(t *testing.T) {
	f := features.New("deleting a Job garbage-collects its pods").
		WithSetup("namespace", framework.Namespace).
		Assess("pods collected", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := framework.Client(t, cfg)
			ns := framework.NamespaceFrom(ctx)
			tmpl := corev1.PodTemplateSpec{
				// Long enough to still run when the Job is deleted.
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{framework.DelayAnnotationKey: "10m"}},
				Spec:       podSpec(),
			}
			job := &batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Name: "long", Namespace: ns},
				Spec:       batchv1.JobSpec{Parallelism: ptr.To[int32](2), Completions: ptr.To[int32](2), Template: tmpl},
			}
			if err := c.Create(ctx, job); err != nil {
				t.Fatal(err)
			}
			selector := client.MatchingLabels{batchv1.JobNameLabel: job.Name}
			framework.Eventually(ctx, t, time.Minute, "2 running pods", func(ctx context.Context) (bool, string, error) {
				var pods corev1.PodList
				if err := c.List(ctx, &pods, client.InNamespace(ns), selector); err != nil {
					return false, err.Error(), nil
				}
				running := 0
				for _, p := range pods.Items {
					if p.Status.Phase == corev1.PodRunning {
						running++
					}
				}
				return running == 2, fmt.Sprintf("%d running", running), nil
			})
			if err := c.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
				t.Fatal(err)
			}
			framework.Eventually(ctx, t, time.Minute, "pods collected", func(ctx context.Context) (bool, string, error) {
				var pods corev1.PodList
				if err := c.List(ctx, &pods, client.InNamespace(ns), selector); err != nil {
					return false, err.Error(), nil
				}
				return len(pods.Items) == 0, fmt.Sprintf("%d pods left", len(pods.Items)), nil
			})
			return ctx
		}).
		Teardown(framework.DeleteNamespace).Feature()
	testenv.Test(t, f)
}
