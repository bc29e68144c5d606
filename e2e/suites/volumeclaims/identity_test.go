package volumeclaims_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// perPodPolicy is one per-pod template for ReplicatedJob rj, with retention.
func perPodPolicy(template, rj, retention string) string {
	return fmt.Sprintf(`[{targetReplicatedJobs: [%s], templates: [{metadata: {name: %s}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}], retentionPolicy: %s}]`,
		rj, template, retention)
}

// deleteJobSet deletes js and waits until it is gone.
func deleteJobSet(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet) {
	t.Helper()
	if err := c.Delete(ctx, js, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(ctx, t, time.Minute, "JobSet "+js.Name+" gone", func(ctx context.Context) (bool, string, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(js), &jobsetv1alpha2.JobSet{})
		return apierrors.IsNotFound(err), fmt.Sprint(err), nil
	})
}

// mountsNot checks that no pod of JobSet jobSet mounts the PVC pvc, which JobSet holder holds.
func mountsNot(ctx context.Context, t *testing.T, c client.Client, ns, jobSet, pvc, holder string) {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: jobSet}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == pvc {
				t.Fatalf("pod %s of JobSet %s mounts JobSet %s's PVC %s", p.Name, jobSet, holder, pvc)
			}
		}
	}
}

// unchanged checks that the PVC ns/name is still the one of uid, not deleted, with no owner,
// still labelled for jobSet with the UID annotation uidAnnotation.
func unchanged(ctx context.Context, t *testing.T, c client.Client, ns, name string, uid types.UID, jobSet, uidAnnotation string) {
	t.Helper()
	var pvc corev1.PersistentVolumeClaim
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &pvc); err != nil {
		t.Fatalf("PVC %s: %v", name, err)
	}
	if pvc.UID != uid || !pvc.DeletionTimestamp.IsZero() || len(pvc.OwnerReferences) > 0 ||
		pvc.Labels[contract.JobSetNameLabelKey] != jobSet || pvc.Annotations[contract.VolumeClaimJobSetUIDAnnotationKey] != uidAnnotation {
		t.Fatalf("PVC %s was taken, deleted or replaced: uid %s (want %s), deleted %v, owners %v, jobset-name %q (want %q), jobset-uid %q (want %q)",
			name, pvc.UID, uid, pvc.DeletionTimestamp, pvc.OwnerReferences, pvc.Labels[contract.JobSetNameLabelKey], jobSet,
			pvc.Annotations[contract.VolumeClaimJobSetUIDAnnotationKey], uidAnnotation)
	}
}

// TestNameTakenNeverMounted: names are joined with "-", so JobSet gpt's ReplicatedJob
// eval-worker and JobSet gpt-eval's worker give the same per-pod PVC names, and JobSet
// base-bert's shared ckpt and JobSet bert's ckpt-base the same shared one. A JobSet whose PVC
// is another JobSet's is refused at admission, naming that JobSet, at any index; one whose
// collision appears only after admission (here a Job added by ElasticJobSet) is told
// (VolumeClaimNameTaken, naming both), and its pod waits instead of mounting the other
// JobSet's data, which is left as it was. Once that PVC is gone, the JobSet gets its own at
// once.
func TestNameTakenNeverMounted(t *testing.T) {
	f := framework.NamespacedFeature("a PVC name another JobSet made is refused, or told, never mounted", "refused; told; the pod waits", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)

		// Shared: base-bert's ckpt is ckpt-base-bert; bert's ckpt-base too.
		baseBert := newJobSet(ns, "base-bert", `[{templates: [{metadata: {name: ckpt}, spec: {accessModes: [ReadWriteMany], resources: {requests: {storage: 1Gi}}}}], retentionPolicy: {whenDeleted: Retain}}]`,
			replicatedJob("w", 1, 1, "ckpt"))
		framework.CreateAll(ctx, t, c, baseBert)
		waitClaimsBound(ctx, t, c, ns, baseBert.Name, []string{"ckpt-base-bert"})
		bert := newJobSet(ns, "bert", `[{templates: [{metadata: {name: ckpt-base}, spec: {accessModes: [ReadWriteMany], resources: {requests: {storage: 1Gi}}}}]}]`,
			replicatedJob("w", 1, 1, "ckpt-base"))
		err := c.Create(ctx, bert)
		if err == nil {
			t.Fatal("JobSet bert admitted; want it refused: its shared PVC ckpt-base-bert is JobSet base-bert's")
		}
		if !strings.Contains(err.Error(), "ckpt-base-bert exists and was made for JobSet base-bert") {
			t.Errorf("the refusal does not name the PVC and its JobSet: %v", err)
		}
		paths, _ := framework.CausePaths(err)
		if want := annotationPath + "[0].templates[0]"; len(paths) != 1 || paths[0] != want {
			t.Errorf("refused at %q, want at %s", paths, want)
		}

		// Per-pod: gpt (1 Job of 2 pods) runs, is deleted, its PVCs retained.
		gpt := newJobSet(ns, "gpt", perPodPolicy("ckpt", "eval-worker", "{whenDeleted: Retain}"), replicatedJob("eval-worker", 1, 2, "ckpt"))
		framework.CreateAll(ctx, t, c, gpt)
		gptClaims := waitClaimsBound(ctx, t, c, ns, gpt.Name, perPodNames("ckpt", "gpt", "eval-worker", 1, 2))
		framework.WaitJobSet(ctx, t, c, gpt, jobsetv1alpha2.JobSetCompleted)
		gptUID := string(gpt.UID)
		deleteJobSet(ctx, t, c, gpt)

		// At admission: gpt-eval's first PVC is gpt's.
		gptEval := func() *jobsetv1alpha2.JobSet {
			return newJobSet(ns, "gpt-eval", perPodPolicy("ckpt", "worker", "{whenDeleted: Delete}"), replicatedJob("worker", 1, 2, "ckpt"))
		}
		err = c.Create(ctx, gptEval())
		if err == nil {
			t.Fatal("JobSet gpt-eval admitted; want it refused: its PVC ckpt-gpt-eval-worker-0-0 is JobSet gpt's")
		}
		if !strings.Contains(err.Error(), "ckpt-gpt-eval-worker-0-0 exists and was made for JobSet gpt ") {
			t.Errorf("the refusal does not name the PVC and its JobSet: %v", err)
		}

		// At admission, at a later index: without gpt's pod 0's, gpt-eval's pod 1's PVC is gpt's.
		if err := c.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ckpt-gpt-eval-worker-0-0"}}); err != nil {
			t.Fatal(err)
		}
		waitClaimsGone(ctx, t, c, ns, gpt.Name, []string{"ckpt-gpt-eval-worker-0-0"})
		err = c.Create(ctx, gptEval())
		if err == nil {
			t.Fatal("JobSet gpt-eval admitted; want it refused: its PVC ckpt-gpt-eval-worker-0-1 is JobSet gpt's")
		}
		if !strings.Contains(err.Error(), "ckpt-gpt-eval-worker-0-1 exists and was made for JobSet gpt ") {
			t.Errorf("the refusal does not name the PVC and its JobSet: %v", err)
		}
		if paths, _ := framework.CausePaths(err); len(paths) != 1 || paths[0] != annotationPath+"[0].templates[0]" {
			t.Errorf("refused at %q, want at %s[0].templates[0]", paths, annotationPath)
		}

		// After admission: gpt-eval of one pod is admitted, and grows (ElasticJobSet) to two,
		// whose pod 1's PVC is gpt's.
		second := newJobSet(ns, "gpt-eval", perPodPolicy("ckpt", "worker", "{whenDeleted: Delete}"), replicatedJob("worker", 1, 1, "ckpt"))
		// Pod 0 runs until the Job has grown (a Job that completed does not).
		delay(second, "20s")
		framework.CreateAll(ctx, t, c, second)
		waitClaimsBound(ctx, t, c, ns, second.Name, perPodNames("ckpt", "gpt-eval", "worker", 1, 1))
		// JobSet's controller writes the JobSet too: on a conflict, read it again and retry.
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(second), second); err != nil {
				return err
			}
			second.Spec.ReplicatedJobs[0].Template.Spec.Parallelism = ptr.To[int32](2)
			second.Spec.ReplicatedJobs[0].Template.Spec.Completions = ptr.To[int32](2)
			return c.Update(ctx, second)
		}); err != nil {
			t.Fatal(err)
		}
		expectEvents(ctx, t, c, second, "VolumeClaimNameTaken")
		framework.Eventually(ctx, t, 30*time.Second, "the Event names both", func(ctx context.Context) (bool, string, error) {
			var list corev1.EventList
			if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
				return false, err.Error(), nil
			}
			for _, e := range list.Items {
				if e.InvolvedObject.UID == second.UID && e.Reason == "VolumeClaimNameTaken" {
					ok := e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "ckpt-gpt-eval-worker-0-1") && strings.Contains(e.Message, "JobSet gpt (uid "+gptUID+")")
					return ok, e.Message, nil
				}
			}
			return false, "no Event", nil
		})
		// The pod of pod 1 waits: none is created with gpt's PVC, and gpt's PVC is as it was.
		for range 10 {
			mountsNot(ctx, t, c, ns, second.Name, "ckpt-gpt-eval-worker-0-1", "gpt")
			unchanged(ctx, t, c, ns, "ckpt-gpt-eval-worker-0-1", gptClaims["ckpt-gpt-eval-worker-0-1"], "gpt", gptUID)
			time.Sleep(300 * time.Millisecond)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(second), second); err != nil {
			t.Fatal(err)
		}
		if second.Status.TerminalState != "" {
			t.Fatalf("JobSet gpt-eval finished (%s) without its own PVC of pod 1", second.Status.TerminalState)
		}

		// gpt's PVC gone, gpt-eval gets its own at once, not on its back-off (the gone PVC
		// reconciles the JobSet that waits for it), and runs to the end. It goes just after a
		// retry of the reconciler's that came 10 s or more after the one before (each counts a
		// name-taken error): the back-off's next is then 20 s or more away.
		framework.WaitRetryAfterGap(ctx, t, "a reconcile of gpt-eval finding its name taken", 10*time.Second, func() int {
			return framework.AddonCounter(ctx, t, "volumeclaims", "jobset_addons_volumeclaims_errors_total", `reason="name-taken"`)
		})
		if err := c.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ckpt-gpt-eval-worker-0-1"}}); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(ctx, t, 10*time.Second, "gpt-eval's own PVC of pod 1, made once gpt's is gone", func(ctx context.Context) (bool, string, error) {
			var pvc corev1.PersistentVolumeClaim
			err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "ckpt-gpt-eval-worker-0-1"}, &pvc)
			if err != nil {
				return false, err.Error(), nil
			}
			return pvc.Labels[contract.JobSetNameLabelKey] == second.Name, "held by JobSet " + pvc.Labels[contract.JobSetNameLabelKey], nil
		})
		waitClaimsBound(ctx, t, c, ns, second.Name, perPodNames("ckpt", "gpt-eval", "worker", 1, 2))
		framework.WaitJobSet(ctx, t, c, second, jobsetv1alpha2.JobSetCompleted)
		checkPodVolumes(ctx, t, c, ns, second.Name, map[string][]string{"worker": {"ckpt"}}, nil)
		return ctx
	})
	testenv.Test(t, f)
}

// TestSharedNameTakenNeverMounted: JobSet base-bert's shared ckpt and JobSet bert's ckpt-base
// both give the PVC ckpt-base-bert. Created at the same moment, both are admitted (the PVC
// does not exist yet; here a quota of no PVCs holds both back until both are in), and one
// of them gets the PVC. The other is told (VolumeClaimNameTaken, naming both), and its pods,
// which mount a shared PVC only, are denied by the Pod webhook, naming the PVC and the JobSet
// holding it, instead of mounting the other JobSet's data. Once that JobSet and its PVC are
// gone, the waiting JobSet gets its own PVC at once and runs with it.
func TestSharedNameTakenNeverMounted(t *testing.T) {
	f := framework.NamespacedFeature("a shared PVC name taken after admission is never mounted", "told; the pods wait, then run on their own PVC", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		const pvcName = "ckpt-base-bert"
		q := framework.Quota(ctx, t, c, ns, "no-pvcs", corev1.ResourcePersistentVolumeClaims, "0")
		jobSets := map[string]*jobsetv1alpha2.JobSet{
			"base-bert": newJobSet(ns, "base-bert", `[{templates: [{metadata: {name: ckpt}, spec: {accessModes: [ReadWriteMany], resources: {requests: {storage: 1Gi}}}}], retentionPolicy: {whenDeleted: Delete}}]`,
				replicatedJob("w", 1, 1, "ckpt")),
			"bert": newJobSet(ns, "bert", `[{templates: [{metadata: {name: ckpt-base}, spec: {accessModes: [ReadWriteMany], resources: {requests: {storage: 1Gi}}}}], retentionPolicy: {whenDeleted: Delete}}]`,
				replicatedJob("w", 1, 1, "ckpt-base")),
		}
		for _, js := range jobSets {
			js.Spec.Suspend = ptr.To(true) // no pods until the PVC is made
			delay(js, "2s")
			framework.CreateAll(ctx, t, c, js)
		}
		// Room for the PVC: whichever reconcile comes first makes it.
		framework.RaiseQuota(ctx, t, c, q, corev1.ResourcePersistentVolumeClaims, "10")
		var held corev1.PersistentVolumeClaim
		framework.Eventually(ctx, t, time.Minute, "PVC "+pvcName+" made for one of the two", func(ctx context.Context) (bool, string, error) {
			err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: pvcName}, &held)
			return err == nil, fmt.Sprint(err), nil
		})
		holder := jobSets[held.Labels[contract.JobSetNameLabelKey]]
		var waiter *jobsetv1alpha2.JobSet
		for name, js := range jobSets {
			if name != held.Labels[contract.JobSetNameLabelKey] {
				waiter = js
			}
		}
		if holder == nil || waiter == nil {
			t.Fatalf("PVC %s labelled for JobSet %q, neither base-bert nor bert", pvcName, held.Labels[contract.JobSetNameLabelKey])
		}
		t.Logf("PVC %s made for JobSet %s; JobSet %s waits", pvcName, holder.Name, waiter.Name)

		// The waiter runs: told, and its pod denied, naming the PVC and its JobSet.
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(waiter), waiter); err != nil {
				return err
			}
			waiter.Spec.Suspend = ptr.To(false)
			return c.Update(ctx, waiter)
		}); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(ctx, t, 30*time.Second, "the VolumeClaimNameTaken Warning names both", func(ctx context.Context) (bool, string, error) {
			msgs, err := framework.EventMessages(ctx, c, waiter, "VolumeClaimNameTaken")
			if err != nil || len(msgs) == 0 {
				return false, fmt.Sprint("no Event ", err), nil
			}
			return strings.Contains(msgs[0], pvcName) && strings.Contains(msgs[0], "JobSet "+holder.Name+" (uid "+string(holder.UID)+")"), msgs[0], nil
		})
		framework.Eventually(ctx, t, 30*time.Second, "the pod denied, naming the PVC and its JobSet", func(ctx context.Context) (bool, string, error) {
			var pods corev1.PodList
			if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: waiter.Name}); err != nil {
				return false, err.Error(), nil
			}
			if len(pods.Items) > 0 {
				t.Fatalf("pod %s of JobSet %s created: it mounts JobSet %s's PVC %s", pods.Items[0].Name, waiter.Name, holder.Name, pvcName)
			}
			var list corev1.EventList
			if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
				return false, err.Error(), nil
			}
			for _, e := range list.Items {
				if e.Reason == "FailedCreate" && strings.HasPrefix(e.InvolvedObject.Name, waiter.Name+"-w-") &&
					strings.Contains(e.Message, "PersistentVolumeClaim "+pvcName+" (volume ") && strings.Contains(e.Message, "was made for JobSet "+holder.Name+" ") {
					return true, "", nil
				}
			}
			return false, "no FailedCreate Event naming the PVC and JobSet " + holder.Name, nil
		})
		// It waits: no pod of it (a pod would mount the other JobSet's PVC), and the PVC is
		// as it was.
		for range 10 {
			var pods corev1.PodList
			if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: waiter.Name}); err != nil {
				t.Fatal(err)
			}
			if len(pods.Items) > 0 {
				t.Fatalf("pod %s of JobSet %s created: it mounts JobSet %s's PVC %s", pods.Items[0].Name, waiter.Name, holder.Name, pvcName)
			}
			var pvc corev1.PersistentVolumeClaim
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: pvcName}, &pvc); err != nil {
				t.Fatal(err)
			}
			if pvc.UID != held.UID || pvc.Labels[contract.JobSetNameLabelKey] != holder.Name || !pvc.DeletionTimestamp.IsZero() {
				t.Fatalf("PVC %s changed: uid %s (want %s), jobset-name %q, deleted %v", pvcName, pvc.UID, held.UID, pvc.Labels[contract.JobSetNameLabelKey], pvc.DeletionTimestamp)
			}
			time.Sleep(300 * time.Millisecond)
		}

		// The holder and its PVC gone, the waiter gets its own at once and runs with it.
		deleteJobSet(ctx, t, c, holder)
		framework.Eventually(ctx, t, 10*time.Second, "the waiter's own PVC, made once the holder's is gone", func(ctx context.Context) (bool, string, error) {
			var pvc corev1.PersistentVolumeClaim
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: pvcName}, &pvc); err != nil {
				return false, err.Error(), nil
			}
			return pvc.Labels[contract.JobSetNameLabelKey] == waiter.Name && pvc.Annotations[contract.VolumeClaimJobSetUIDAnnotationKey] == string(waiter.UID),
				"held by JobSet " + pvc.Labels[contract.JobSetNameLabelKey], nil
		})
		framework.WaitJobSet(ctx, t, c, waiter, jobsetv1alpha2.JobSetCompleted)
		tmpl := waiter.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].VolumeMounts[0].Name
		if n := checkPodVolumes(ctx, t, c, ns, waiter.Name, nil, map[string]string{tmpl: pvcName}); n == 0 {
			t.Errorf("JobSet %s completed without pods", waiter.Name)
		}
		return ctx
	})
	testenv.Test(t, f)
}

// TestPodBeforeItsPVC: a pod can come before its PVC: the reconciler has not made it yet, or
// cannot (here a quota holds back JobSet gpt-eval's 2Gi PVC). JobSet gpt (ReplicatedJob
// eval-worker), admitted meanwhile since no PVC of the name exists, gives the same PVC name,
// and its 1Gi PVC fits the quota. The pod of gpt-eval must never mount it: the Pod webhook
// makes a pod's missing PVC itself, for the pod's JobSet, or denies the pod until it can, so
// whoever makes the PVC first holds the name. gpt-eval is told (VolumeClaimNameTaken) and
// waits; once the quota has room and gpt and its PVC are gone, it gets its own and runs.
func TestPodBeforeItsPVC(t *testing.T) {
	f := framework.NamespacedFeature("a pod that comes before its PVC never mounts another JobSet's of that name", "the pod waits, then runs on its own PVC", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		const pvcName = "ckpt-gpt-eval-worker-0-0"
		q := framework.Quota(ctx, t, c, ns, "storage", corev1.ResourceRequestsStorage, "1Gi")
		gptEval := newJobSet(ns, "gpt-eval", `[{targetReplicatedJobs: [worker], templates: [{metadata: {name: ckpt}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 2Gi}}}}], retentionPolicy: {whenDeleted: Delete}}]`,
			replicatedJob("worker", 1, 1, "ckpt"))
		framework.CreateAll(ctx, t, c, gptEval)
		// Its pod comes: created (it would then mount whatever PVC of its name appears), or
		// denied for want of its PVC, which the quota holds back.
		framework.Eventually(ctx, t, 30*time.Second, "gpt-eval's pod created or denied for want of its PVC", func(ctx context.Context) (bool, string, error) {
			var pods corev1.PodList
			if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: gptEval.Name}); err != nil {
				return false, err.Error(), nil
			}
			if len(pods.Items) > 0 {
				return true, "", nil
			}
			var list corev1.EventList
			if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
				return false, err.Error(), nil
			}
			for _, e := range list.Items {
				if e.Reason == "FailedCreate" && strings.HasPrefix(e.InvolvedObject.Name, gptEval.Name+"-worker-") && strings.Contains(e.Message, pvcName) {
					return true, "", nil
				}
			}
			return false, "no pod, and no FailedCreate Event naming " + pvcName, nil
		})
		var pvc corev1.PersistentVolumeClaim
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: pvcName}, &pvc); !apierrors.IsNotFound(err) {
			t.Fatalf("PVC %s: %v (labelled for %q), want none yet: the quota holds it back", pvcName, err, pvc.Labels[contract.JobSetNameLabelKey])
		}

		// gpt is admitted (no PVC of the name exists), and its PVC is made.
		gpt := newJobSet(ns, "gpt", perPodPolicy("ckpt", "eval-worker", "{whenDeleted: Delete}"), replicatedJob("eval-worker", 1, 1, "ckpt"))
		framework.CreateAll(ctx, t, c, gpt)
		held := waitClaimsBound(ctx, t, c, ns, gpt.Name, []string{pvcName})[pvcName]
		for range 10 {
			mountsNot(ctx, t, c, ns, gptEval.Name, pvcName, gpt.Name)
			time.Sleep(300 * time.Millisecond)
		}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: pvcName}, &pvc); err != nil || pvc.UID != held || pvc.Labels[contract.JobSetNameLabelKey] != gpt.Name {
			t.Fatalf("PVC %s changed: %v, uid %s (want %s), jobset-name %q", pvcName, err, pvc.UID, held, pvc.Labels[contract.JobSetNameLabelKey])
		}
		expectEvents(ctx, t, c, gptEval, "VolumeClaimNameTaken")

		// Room in the quota, gpt and its PVC gone: gpt-eval gets its own PVC and runs.
		framework.RaiseQuota(ctx, t, c, q, corev1.ResourceRequestsStorage, "10Gi")
		deleteJobSet(ctx, t, c, gpt)
		framework.Eventually(ctx, t, 30*time.Second, "gpt-eval's own PVC, made once gpt's is gone", func(ctx context.Context) (bool, string, error) {
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: pvcName}, &pvc); err != nil {
				return false, err.Error(), nil
			}
			return pvc.Annotations[contract.VolumeClaimJobSetUIDAnnotationKey] == string(gptEval.UID), "held by JobSet " + pvc.Labels[contract.JobSetNameLabelKey], nil
		})
		framework.WaitJobSet(ctx, t, c, gptEval, jobsetv1alpha2.JobSetCompleted)
		checkPodVolumes(ctx, t, c, ns, gptEval.Name, map[string][]string{"worker": {"ckpt"}}, nil)
		return ctx
	})
	testenv.Test(t, f)
}

// TestSmallerRerunLeavesOthers: pretrain ran with 4 Jobs and whenDeleted: Retain; a 2-Job
// pretrain (a smoke test, whenDeleted: Delete) of the same name takes over the two retained
// PVCs it mounts, and only those: deleting it deletes them, and leaves the checkpoints of
// Jobs 2 and 3 as they were, with no owner, for the next full run.
func TestSmallerRerunLeavesOthers(t *testing.T) {
	f := framework.NamespacedFeature("a smaller re-run takes over only the retained PVCs it mounts", "the others are left as they were", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		full := newJobSet(ns, "pretrain", perPodPolicy("ckpt", "w", "{whenDeleted: Retain}"), replicatedJob("w", 4, 1, "ckpt"))
		framework.CreateAll(ctx, t, c, full)
		uids := waitClaimsBound(ctx, t, c, ns, full.Name, perPodNames("ckpt", "pretrain", "w", 4, 1))
		framework.WaitJobSet(ctx, t, c, full, jobsetv1alpha2.JobSetCompleted)
		fullUID := string(full.UID)
		deleteJobSet(ctx, t, c, full)

		smoke := newJobSet(ns, "pretrain", perPodPolicy("ckpt", "w", "{whenDeleted: Delete}"), replicatedJob("w", 2, 1, "ckpt"))
		delay(smoke, "2s")
		framework.CreateAll(ctx, t, c, smoke)
		framework.WaitJobSet(ctx, t, c, smoke, jobsetv1alpha2.JobSetCompleted)
		checkPodVolumes(ctx, t, c, ns, smoke.Name, map[string][]string{"w": {"ckpt"}}, nil)
		// It mounts the retained PVCs of Jobs 0 and 1: taken over, owned by it (whenDeleted: Delete).
		framework.Eventually(ctx, t, 30*time.Second, "Jobs 0 and 1's PVCs taken over", func(ctx context.Context) (bool, string, error) {
			got, err := claims(ctx, c, ns, "pretrain")
			if err != nil {
				return false, err.Error(), nil
			}
			for _, n := range []string{"ckpt-pretrain-w-0-0", "ckpt-pretrain-w-1-0"} {
				pvc := got[n]
				if pvc.UID != uids[n] || len(pvc.OwnerReferences) != 1 || pvc.OwnerReferences[0].UID != smoke.UID {
					return false, fmt.Sprintf("%s: uid %s, owners %v", n, pvc.UID, pvc.OwnerReferences), nil
				}
			}
			return true, "", nil
		})
		for _, n := range []string{"ckpt-pretrain-w-2-0", "ckpt-pretrain-w-3-0"} {
			unchanged(ctx, t, c, ns, n, uids[n], "pretrain", fullUID)
		}

		deleteJobSet(ctx, t, c, smoke)
		waitClaimsGone(ctx, t, c, ns, "pretrain", []string{"ckpt-pretrain-w-0-0", "ckpt-pretrain-w-1-0"})
		for range 10 {
			for _, n := range []string{"ckpt-pretrain-w-2-0", "ckpt-pretrain-w-3-0"} {
				unchanged(ctx, t, c, ns, n, uids[n], "pretrain", fullUID)
			}
			time.Sleep(300 * time.Millisecond)
		}
		return ctx
	})
	testenv.Test(t, f)
}
