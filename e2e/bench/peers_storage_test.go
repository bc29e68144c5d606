package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/testbed"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// The second kube-controller-managers of the peers (testbed.StartControllerManager), each
// named for its /proc comm.
const (
	kcmStatefulSet = "kcm-statefulset"
	kcmEphemeral   = "kcm-ephemeral"
	kcmClaims      = "kcm-claims"
)

var (
	pvcResource   = corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	claimResource = resourcev1.SchemeGroupVersion.WithResource("resourceclaims")
)

// peerWaitBound: peerWait waits for the pods to be bound too (bench-smoke does not: the
// scheduler's backoff on pods whose claims are not bound yet decides that time).
var peerWaitBound = true

// peerWait times a side's window: create makes its objects; the result is when the n-th
// object of resource in ns (with labels) first existed, and the pods-th pod was first bound,
// counted from just before create, by watches started before it.
func peerWait(ctx context.Context, tb testbed.Config, ns string, resource schema.GroupVersionResource, labels map[string]string, n, pods int, create func() error) (peerResult, error) {
	rc, err := tb.RESTConfig()
	if err != nil {
		return peerResult{}, err
	}
	objects, err := watchArrivals(ctx, rc, resource, ns, labels, "")
	if err != nil {
		return peerResult{}, err
	}
	defer objects.Stop()
	bound, err := watchArrivals(ctx, rc, corev1.SchemeGroupVersion.WithResource("pods"), ns, nil, "spec.nodeName!=")
	if err != nil {
		return peerResult{}, err
	}
	defer bound.Stop()
	made, err := watchArrivals(ctx, rc, corev1.SchemeGroupVersion.WithResource("pods"), ns, nil, "")
	if err != nil {
		return peerResult{}, err
	}
	defer made.Stop()
	start := time.Now()
	if err := create(); err != nil {
		return peerResult{}, err
	}
	last, err := objects.until(n, 10*time.Minute)
	if err != nil {
		return peerResult{}, fmt.Errorf("%s: %w", resource.Resource, err)
	}
	res := peerResult{objects: n, lastObject: last.Sub(start)}
	if pods > 0 && peerWaitBound {
		if last, err = bound.until(pods, 10*time.Minute); err != nil {
			return res, fmt.Errorf("pods bound: %w", err)
		}
		res.lastBound = last.Sub(start)
		if last, err = made.until(pods, time.Minute); err == nil {
			res.lastPod = last.Sub(start)
		}
	}
	return res, nil
}

// createRetrying creates obj, again after an error of the API server's own (a webhook's
// connection closed under load) for up to 5 tries: a side fails on what a controller would
// retry.
func createRetrying(ctx context.Context, c client.Client, obj client.Object) error {
	var err error
	for try := range 5 {
		if err = c.Create(ctx, obj); err == nil || !apierrors.IsInternalError(err) {
			return err
		}
		time.Sleep(time.Duration(try+1) * 200 * time.Millisecond)
	}
	return err
}

// runsAnHour: a Job's pods run (on kwok) for the whole window, as a StatefulSet's do, so that
// no side's window holds the completions of its pods and Jobs.
var runsAnHour = metav1.ObjectMeta{Annotations: map[string]string{testbed.DelayAnnotationKey: "1h"}}

// dataMount is the volume data mounted by a container.
var dataMount = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}

// volumeClaimsPeers: per-pod PVCs of one JobSet ($PEERS_VOLUMECLAIMS_JOBS Jobs, 200, x
// $PEERS_VOLUMECLAIMS_PODS pods, 10) against the same JobSet with a generic ephemeral volume in
// its pod template (the choice a JobSet user makes: JobSet's own cost is on both sides), and,
// as context, a StatefulSet of as many replicas (Parallel, one volumeClaimTemplate) and an
// Indexed Job of as many pods with a generic ephemeral volume; smoke: 10 x 10 against the same
// JobSet only.
func volumeClaimsPeers(ctx context.Context, b *testing.B, tb testbed.Config, c client.Client, smoke bool) []peerPair {
	jobs := envIntOr("PEERS_VOLUMECLAIMS_JOBS", 200)
	perJob := envIntOr("PEERS_VOLUMECLAIMS_PODS", 10)
	if smoke {
		jobs, perJob = 10, 10
	}
	n := jobs * perJob
	// jobSet is the one JobSet both same-JobSet sides make, its pods mounting the volume data.
	jobSet := func(ns string) (*jobsetv1alpha2.JobSet, *corev1.PodSpec) {
		rj := addontest.ReplicatedJob("w").Replicas(int32(jobs)).Pods(int32(perJob)).Mount("data").PodAnnotation(testbed.DelayAnnotationKey, "1h")
		return addontest.JobSet(ns, "peers").ReplicatedJobs(rj).Obj(), rj.PodSpec()
	}
	ours := peerSide{name: "volumeclaims (one JobSet)", procs: []string{"volumeclaims"}, run: func(ctx context.Context, b *testing.B, c client.Client, ns string) (peerResult, error) {
		js, _ := jobSet(ns)
		js.Annotations = map[string]string{contract.PoliciesAnnotationKey: `[{targetReplicatedJobs: [w], templates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]}]`}
		return peerWait(ctx, tb, ns, pvcResource, map[string]string{contract.ManagedByLabelKey: contract.VolumeClaimsManagedByValue}, n, n, func() error { return createRetrying(ctx, c, js) })
	}}
	ephemeralSource := corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: pvcSpec()}}}
	sameJobSet := peerSide{name: "generic ephemeral volume (the same JobSet)", procs: []string{kcmEphemeral}, setup: peerControllerManager(tb, kcmEphemeral, "ephemeral-volume-controller"),
		run: func(ctx context.Context, b *testing.B, c client.Client, ns string) (peerResult, error) {
			js, pod := jobSet(ns)
			pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "data", VolumeSource: ephemeralSource})
			js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec = *pod
			return peerWait(ctx, tb, ns, pvcResource, nil, n, n, func() error { return createRetrying(ctx, c, js) })
		}}
	statefulSet := peerSide{name: "StatefulSet", procs: []string{kcmStatefulSet}, setup: peerControllerManager(tb, kcmStatefulSet, "statefulset-controller"),
		run: func(ctx context.Context, b *testing.B, c client.Client, ns string) (peerResult, error) {
			labels := map[string]string{"app": "peers"}
			ss := &appsv1.StatefulSet{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "peers"},
				Spec: appsv1.StatefulSetSpec{
					Replicas: ptr.To(int32(n)), PodManagementPolicy: appsv1.ParallelPodManagement,
					Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: labels},
						Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox", VolumeMounts: dataMount}}},
					},
					VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: pvcSpec()}},
				},
			}
			return peerWait(ctx, tb, ns, pvcResource, nil, n, n, func() error { return createRetrying(ctx, c, ss) })
		}}
	ephemeral := peerSide{name: "generic ephemeral volume", procs: []string{kcmEphemeral}, setup: peerControllerManager(tb, kcmEphemeral, "ephemeral-volume-controller"),
		run: func(ctx context.Context, b *testing.B, c client.Client, ns string) (peerResult, error) {
			job := &batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "peers"},
				Spec: batchv1.JobSpec{
					Parallelism: ptr.To(int32(n)), Completions: ptr.To(int32(n)), CompletionMode: ptr.To(batchv1.IndexedCompletion), BackoffLimit: ptr.To[int32](0),
					Template: corev1.PodTemplateSpec{ObjectMeta: runsAnHour, Spec: corev1.PodSpec{
						RestartPolicy: corev1.RestartPolicyNever,
						Containers:    []corev1.Container{{Name: "main", Image: "busybox", VolumeMounts: dataMount}},
						Volumes:       []corev1.Volume{{Name: "data", VolumeSource: ephemeralSource}},
					}},
				},
			}
			return peerWait(ctx, tb, ns, pvcResource, nil, n, n, func() error { return createRetrying(ctx, c, job) })
		}}
	pair := peerPair{name: fmt.Sprintf("volumeclaims: %d per-pod PVCs (%d Jobs x %d pods)", n, jobs, perJob), ours: ours, peers: []peerSide{sameJobSet, statefulSet, ephemeral}}
	if smoke {
		pair.peers = pair.peers[:1]
	}
	return []peerPair{pair}
}

// peersDeviceClass is the DeviceClass of the resourceclaims pair's claims, and peersTemplates
// the add-on's templates of one claim of it.
const (
	peersDeviceClass = "peers"
	peersTemplates   = `[{metadata: {name: dev}, spec: {devices: {requests: [{name: d, exactly: {deviceClassName: peers}}]}}}]`
)

// resourceClaimsPeers: a claim for each of jobs one-pod Jobs (JobSets of 10 Jobs) against the
// same JobSets whose pods name a ResourceClaimTemplate instead: kube-controller-manager's
// resourceclaim controller makes a claim for each pod. That controller, which also removes the
// reservations of finished pods and the claims' finalizers for both, runs in both windows, in
// a second kube-controller-manager; the claims ask for devices that the scheduler allocates
// (testbed.PublishDevices).
func resourceClaimsPeers(ctx context.Context, b *testing.B, tb testbed.Config, c client.Client, smoke bool) []peerPair {
	const perJobSet = 10
	jobs := envIntOr("PEERS_RESOURCECLAIMS_JOBS", 500)
	if smoke {
		jobs = 50
	}
	// A class of its own, always of as many devices (slices of a pool cannot be added to later).
	if err := testbed.PublishDevices(ctx, tb, peersDeviceClass, max(8, (jobs+testbed.DevicesPerSlice-1)/testbed.DevicesPerSlice)); err != nil {
		b.Fatal(err)
	}
	jobSets := func(ns string, mk func(rj *addontest.ReplicatedJobWrapper)) func() error {
		return func() error {
			return createParallel(jobs/perJobSet, 8, func(i int) error {
				rj := addontest.ReplicatedJob("w").Replicas(perJobSet).PodAnnotation(testbed.DelayAnnotationKey, "1h")
				mk(rj)
				return createRetrying(ctx, c, addontest.JobSet(ns, fmt.Sprintf("peers-%d", i)).ReplicatedJobs(rj).Obj())
			})
		}
	}
	setup := peerControllerManager(tb, kcmClaims, "resourceclaim-controller")
	ours := peerSide{name: "resourceclaims (per Job)", procs: []string{"resourceclaims", kcmClaims}, setup: setup,
		run: func(ctx context.Context, b *testing.B, c client.Client, ns string) (peerResult, error) {
			return peerWait(ctx, tb, ns, claimResource, map[string]string{contract.ManagedByLabelKey: contract.ResourceClaimsManagedByValue}, jobs, jobs,
				jobSets(ns, func(rj *addontest.ReplicatedJobWrapper) {
					rj.JobAnnotation(contract.TemplatesAnnotationKey, peersTemplates)
				}))
		}}
	template := peerSide{name: "ResourceClaimTemplate", procs: []string{kcmClaims}, setup: setup,
		run: func(ctx context.Context, b *testing.B, c client.Client, ns string) (peerResult, error) {
			rct := &resourcev1.ResourceClaimTemplate{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dev"},
				Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
					Requests: []resourcev1.DeviceRequest{{Name: "d", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: peersDeviceClass}}}}}},
			}
			if err := createRetrying(ctx, c, rct); err != nil {
				return peerResult{}, err
			}
			return peerWait(ctx, tb, ns, claimResource, nil, jobs, jobs, jobSets(ns, func(rj *addontest.ReplicatedJobWrapper) {
				pod := rj.PodSpec()
				pod.ResourceClaims = []corev1.PodResourceClaim{{Name: "dev", ResourceClaimTemplateName: ptr.To("dev")}}
				pod.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "dev"}}
			}))
		}}
	return []peerPair{{name: fmt.Sprintf("resourceclaims: %d claims of one-pod Jobs", jobs), ours: ours, peers: []peerSide{template}}}
}
