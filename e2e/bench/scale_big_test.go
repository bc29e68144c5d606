package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/testbed"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// The big JobSet of BenchmarkScale: one JobSet of many pods, against bare client loops.

// bigJobSet: one JobSet of jobs x pods pods in stage s1 (after a stage s0 of one pod), with a
// per-pod PVC (ckpt) and a claim per Job (dev) on s1, sequenced in order. Created suspended:
// the time until every PVC and claim exists, against a bare client-go loop making the same
// objects at the add-ons' QPS, as the add-ons' ServiceAccounts, in the same run. Then resumed:
// the Pod webhook's latency on its pods against the null webhook called on the same pods, and
// the sequencer's release of s1 (from s0's Job Complete to the last gate lifted).
func bigJobSet(ctx context.Context, b *testing.B, c client.Client, cs kubernetes.Interface, tb testbed.Config, jobs, pods int) {
	total := jobs * pods
	ns := namespace(ctx, b, c, "scale-big")
	adminRC, err := tb.RESTConfig()
	if err != nil {
		b.Fatal(err)
	}
	pvcLabels := map[string]string{contract.ManagedByLabelKey: contract.VolumeClaimsManagedByValue}
	claimLabels := map[string]string{contract.ManagedByLabelKey: contract.ResourceClaimsManagedByValue}
	watchBoth := func(ns string) (*objectClock, *objectClock) {
		pv, err := watchCount(ctx, adminRC, corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), ns, pvcLabels, "")
		if err != nil {
			b.Fatal(err)
		}
		cl, err := watchCount(ctx, adminRC, resourcev1.SchemeGroupVersion.WithResource("resourceclaims"), ns, claimLabels, "")
		if err != nil {
			b.Fatal(err)
		}
		return pv, cl
	}
	// Bound only once a pod is scheduled with it: the provisioning of one loop's 10,000 PVCs
	// does not load the apiserver while the other loop runs.
	wffc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: scaleStorageClass}, Provisioner: "kubernetes.io/host-path",
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)}
	if err := c.Create(ctx, wffc); client.IgnoreAlreadyExists(err) != nil {
		b.Fatal(err)
	}
	nullWebhook(ctx, b, cs, tb, "", "v1", "pods")
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tl := watchTimeline(wctx, b, cs)

	big := addontest.JobSet(ns, "big").Annotation(contract.PoliciesAnnotationKey, `[{targetReplicatedJobs: [s1], templates: [{metadata: {name: ckpt}, spec: {accessModes: [ReadWriteOnce], storageClassName: `+scaleStorageClass+`,
  resources: {requests: {storage: 1Gi}}}}]}]`).
		InOrder().Suspend(true)
	for _, st := range []struct {
		name       string
		jobs, pods int
	}{{"s0", 1, 1}, {"s1", jobs, pods}} {
		// The null webhook is called on the same pods as the Pod webhook.
		rj := addontest.ReplicatedJob(st.name).Replicas(int32(st.jobs)).Pods(int32(st.pods)).Requests("10m", "").
			PodLabel(nullLabel, "true")
		if st.name == "s0" {
			// s0 runs until s1's pods exist, so that the release is of pods that exist (it is
			// also told from the last of them).
			rj.PodAnnotation(testbed.DelayAnnotationKey, fmt.Sprintf("%ds", max(10, total/50)))
		}
		if st.name == "s1" {
			rj.JobAnnotation(contract.TemplatesAnnotationKey, `[{metadata: {name: dev}, spec: {devices: {requests: [{name: dev, exactly: {deviceClassName: `+scaleDeviceClass+`}}]}}}]`).Mount("ckpt")
		}
		big.ReplicatedJobs(rj)
	}
	js := big.Obj()

	// Ours: from the JobSet's create until every PVC and claim exists.
	pv, cl := watchBoth(ns)
	start := time.Now()
	if err := c.Create(ctx, js); err != nil {
		b.Fatal(err)
	}
	pvAt, err := pv.until(total, 15*time.Minute)
	if err != nil {
		b.Fatalf("PVCs: %v", err)
	}
	clAt, err := cl.until(jobs, 5*time.Minute)
	if err != nil {
		b.Fatalf("claims: %v", err)
	}
	pv.Stop()
	cl.Stop()
	ours := latest(pvAt, clAt).Sub(start)

	// The bare loops: the same objects, in a namespace of their own, as the add-ons'
	// ServiceAccounts with their QPS and burst, PVCs and claims at once (as the two add-ons).
	var pvcs corev1.PersistentVolumeClaimList
	var claimList resourcev1.ResourceClaimList
	if err := c.List(ctx, &pvcs, client.InNamespace(ns), client.MatchingLabels(pvcLabels)); err != nil {
		b.Fatal(err)
	}
	if err := c.List(ctx, &claimList, client.InNamespace(ns), client.MatchingLabels(claimLabels)); err != nil {
		b.Fatal(err)
	}
	bareNS := namespace(ctx, b, c, "scale-bare")
	pvcClient, claimClient := bareClient(b, tb, "volumeclaims", vcQPS, vcBurst), bareClient(b, tb, "resourceclaims", rcQPS, rcBurst)
	bpv, bcl := watchBoth(bareNS)
	time.Sleep(5 * time.Second) // the JobSet controller's Jobs and the add-ons' Events settle
	bareStart := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		errs[0] = createParallel(len(pvcs.Items), 16, func(i int) error {
			p := &pvcs.Items[i]
			_, err := pvcClient.CoreV1().PersistentVolumeClaims(bareNS).Create(ctx, &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: p.Name, Labels: p.Labels, Annotations: p.Annotations}, Spec: p.Spec}, metav1.CreateOptions{})
			return err
		})
	}()
	go func() {
		defer wg.Done()
		errs[1] = createParallel(len(claimList.Items), 16, func(i int) error {
			x := &claimList.Items[i]
			_, err := claimClient.ResourceV1().ResourceClaims(bareNS).Create(ctx, &resourcev1.ResourceClaim{
				ObjectMeta: metav1.ObjectMeta{Name: x.Name, Labels: x.Labels, Annotations: x.Annotations}, Spec: x.Spec}, metav1.CreateOptions{})
			return err
		})
	}()
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	bpvAt, err := bpv.until(total, 15*time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	bclAt, err := bcl.until(jobs, 5*time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	bpv.Stop()
	bcl.Stop()
	bare := latest(bpvAt, bclAt).Sub(bareStart)

	// Resumed: its pods are made (the s1 pods gated), through the Pod webhook and the null one.
	podClock, err := watchCount(ctx, adminRC, corev1.SchemeGroupVersion.WithResource("pods"), ns, map[string]string{contract.JobSetNameLabelKey: "big"}, "")
	if err != nil {
		b.Fatal(err)
	}
	defer podClock.Stop()
	hooks := map[string]histogram{}
	for _, h := range []string{"mpod.volumeclaims.jobset-addons.io", nullWebhookName} {
		if hooks[h], err = webhookHistogram(ctx, cs, h); err != nil {
			b.Fatal(err)
		}
	}
	resumed := time.Now()
	if err := c.Patch(ctx, js, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`))); err != nil {
		b.Fatal(err)
	}
	podsAt, err := podClock.until(total+1, 20*time.Minute)
	if err != nil {
		b.Fatalf("pods: %v", err)
	}
	for h, before := range hooks {
		after, err := webhookHistogram(ctx, cs, h)
		if err != nil {
			b.Fatal(err)
		}
		hooks[h] = after.minus(before)
	}
	// The release of s1: from s0's Job Complete to the last s1 pod ungated.
	var release, tail time.Duration
	var ungated int
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 20*time.Minute, true, func(context.Context) (bool, error) {
		_, releases, _, _ := tl.handoffs(ns, []string{"big"})
		tl.mu.Lock()
		ungated = 0
		var lastSeen, lastUngated time.Time
		for uid, key := range tl.podKey {
			if key != ns+"/big/s1" {
				continue
			}
			lastSeen = latest(lastSeen, tl.seen[uid])
			if at, ok := tl.ungated[uid]; ok {
				ungated++
				lastUngated = latest(lastUngated, at)
			}
		}
		var s0Complete time.Time
		for key, at := range tl.complete {
			if strings.HasPrefix(key, ns+"/big/s0/") {
				s0Complete = at
			}
		}
		tl.mu.Unlock()
		if len(releases) > 0 && ungated == total {
			release = releases[0]
			tail = lastUngated.Sub(latest(lastSeen, s0Complete))
			return true, nil
		}
		return false, nil
	}); err != nil {
		b.Fatalf("s1 released: %d of %d pods ungated", ungated, total)
	}
	// The same release by bare loops, on JobSets of the same shape (without the PVCs and
	// claims), once the big JobSet and its pods are gone.
	deleteJobSetsNow(ctx, b, c, tb, ns, []*jobsetv1alpha2.JobSet{js})
	releases := append([]releaseResult{{loop: oursRelease, times: []time.Duration{release}}},
		measureRelease(ctx, b, c, tb, tl, releaseRun{jobs: jobs, pods: pods, rounds: 1,
			loops: []releaseLoop{bareAtSequencerLimits, {qps: -1, workers: envIntOr("RELEASE_UNLIMITED_WORKERS", 128)}}})...)
	h, null := hooks["mpod.volumeclaims.jobset-addons.io"], hooks[nullWebhookName]
	handler, err := handlerHistogram(ctx, tb, "volumeclaims", "/mutate--v1-pod")
	if err != nil {
		b.Fatal(err)
	}
	printTable(fmt.Sprintf("scale: one JobSet of %d Jobs x %d pods (s1, after one pod in s0)", jobs, pods), []row{
		{what: fmt.Sprintf("%d per-pod PVCs and %d claims exist, from the JobSet's create", total, jobs), ours: ours.Round(time.Millisecond).String(),
			baseline: bare.Round(time.Millisecond).String() + " bare", ratio: fmt.Sprintf("%.2f", bare.Seconds()/ours.Seconds()), target: "ratio >= 0.9"},
		{what: "  the PVCs; the claims", ours: pvAt.Sub(start).Round(time.Millisecond).String(), baseline: clAt.Sub(start).Round(time.Millisecond).String(), target: "-"},
		{what: "  bare: the PVCs; the claims", ours: bpvAt.Sub(bareStart).Round(time.Millisecond).String(), baseline: bclAt.Sub(bareStart).Round(time.Millisecond).String(), target: "-"},
		{what: fmt.Sprintf("resumed: its %d pods exist", total+1), ours: podsAt.Sub(resumed).Round(time.Millisecond).String(), target: "-"},
		{what: fmt.Sprintf("Pod webhook latency p50 (%.0f calls; null on the same pods)", h.count), ours: "<= " + fmtSeconds(h.quantile(0.5)), baseline: "<= " + fmtSeconds(null.quantile(0.5)) + " null", target: "-"},
		{what: "Pod webhook latency p99", ours: "<= " + fmtSeconds(h.quantile(0.99)), baseline: "<= " + fmtSeconds(null.quantile(0.99)) + " null", target: "-"},
		{what: "Pod webhook latency mean (the null webhook runs in the busy bench process)", ours: fmtSeconds(h.mean()), baseline: fmtSeconds(null.mean()) + " null", target: "-"},
		{what: fmt.Sprintf("  handler time in the controller p50/p99 (%.0f, since its start)", handler.count), ours: "<= " + fmtSeconds(handler.quantile(0.5)) + " / " + fmtSeconds(handler.quantile(0.99)), target: "-"},
		{what: fmt.Sprintf("s0 Complete to the last of %d s1 gates lifted (sequencer)", total), ours: release.Round(time.Millisecond).String(), target: "-"},
		{what: "  from the later of s0 Complete and the last s1 pod's arrival", ours: tail.Round(time.Millisecond).String(), target: "-"},
	})
	printTable(fmt.Sprintf("scale: the release of the %d s1 pods, against bare loops on pods gated the same way", total), releaseRows(releases, total))
}
