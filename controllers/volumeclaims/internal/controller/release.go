package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/volumeclaims"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Kubernetes' pvc-protection controller keeps a deleted PVC, Terminating, while any pod that
// was scheduled with it exists: a finished pod holds it as long as a running one. JobSet keeps
// its finished Jobs and their pods until the JobSet is deleted (or its ttlSecondsAfterFinished
// fires), so a PVC that retention deletes when the JobSet, or a targeted ReplicatedJob, finishes
// is released only then. release tells the user so (VolumeClaimsHeld, VolumeClaimsReleased) and,
// where the policy's finishedPods is Delete, deletes the JobSet's finished pods that hold it.

// heldRecheck is how soon a reconcile looks again while a held PVC waits for a pod of the
// JobSet to finish before finishedPods: Delete can delete it.
const heldRecheck = 10 * time.Second

// release follows the add-on's PVCs that retention deleted (dropped, still listed while
// Terminating): it tells which are held and by how many pods, deletes the finished pods of
// the JobSet that hold those whose policy says finishedPods: Delete, and tells when they are
// gone.
func (r *Reconciler) release(ctx context.Context, js *jobsetv1alpha2.JobSet, dropped []volumeclaims.Claim, existing map[string]*corev1.PersistentVolumeClaim) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(js)
	terminating := map[string]volumeclaims.Claim{}
	for _, c := range dropped {
		if pvc, ok := existing[c.Name]; ok && !pvc.DeletionTimestamp.IsZero() {
			terminating[c.Name] = c
		}
	}
	gone, newlyHeld := r.track(key, js.UID, existing, terminating)
	if len(gone) > 0 {
		slices.Sort(gone)
		ctrl.LoggerFrom(ctx).Info("PVCs deleted by retention are gone", "count", len(gone))
		addon.Tell(r.Recorder, js, claimRef(js, gone[0]), corev1.EventTypeNormal, ReasonReleased, actionRelease,
			"%d PersistentVolumeClaims deleted by retention are gone, their storage released: %s", len(gone), names(gone))
	}
	if len(terminating) == 0 {
		return ctrl.Result{}, nil
	}

	var pods corev1.PodList
	if err := r.Reader.List(ctx, &pods, client.InNamespace(js.Namespace), client.MatchingLabels{contract.JobSetNameLabelKey: js.Name}); err != nil {
		reconcileErrors.WithLabelValues("list").Inc()
		return ctrl.Result{}, fmt.Errorf("listing the pods that hold deleted PVCs: %w", err)
	}
	holders := jobsets.PVCHolders(pods.Items, sets.KeySet(terminating))

	// finishedPods: Delete: the JobSet's own finished pods go; what is left holds.
	doomed := map[types.UID]*corev1.Pod{}
	waiting := false
	for name, ps := range holders {
		if terminating[name].Retention.FinishedPods != contract.RetentionPolicyDelete {
			continue
		}
		for _, p := range ps {
			switch {
			case p.Labels[contract.JobSetUIDLabelKey] != string(js.UID):
				// Not this JobSet's pod (an earlier JobSet of the same name): never deleted.
			case !jobsets.PodFinished(p):
				waiting = true
			case p.DeletionTimestamp.IsZero():
				doomed[p.UID] = p
			}
		}
	}
	if err := r.deleteFinished(ctx, js, doomed); err != nil {
		return ctrl.Result{}, err
	}

	r.tellHeld(js, holders, doomed, newlyHeld)
	if waiting {
		return ctrl.Result{RequeueAfter: heldRecheck}, nil
	}
	return ctrl.Result{}, nil
}

// tellHeld tells, once per PVC, the PVCs deleted by retention that pods hold (holders) and that
// will not go by themselves: not being deleted, and not deleted now (doomed).
func (r *Reconciler) tellHeld(js *jobsetv1alpha2.JobSet, holders map[string][]*corev1.Pod, doomed map[types.UID]*corev1.Pod, newlyHeld sets.Set[string]) {
	var held, heldNames []string
	for name, ps := range holders {
		left := 0 // pods that will not go by themselves: not being deleted, not deleted now
		for _, p := range ps {
			if _, ok := doomed[p.UID]; !ok && p.DeletionTimestamp.IsZero() {
				left++
			}
		}
		if left > 0 && newlyHeld.Has(name) && r.told.Once(js.UID, heldKey(name)) {
			held = append(held, fmt.Sprintf("%s (%s)", name, plural(left, "pod")))
			heldNames = append(heldNames, name)
		}
	}
	if len(held) > 0 {
		slices.Sort(held)
		slices.Sort(heldNames)
		addon.Tell(r.Recorder, js, claimRef(js, heldNames[0]), corev1.EventTypeNormal, ReasonHeld, actionRelease,
			"%d PersistentVolumeClaims deleted by retention stay Terminating while pods that ran with them exist (Kubernetes' pvc-protection): %s; %s",
			len(held), names(held), releasedBy(js))
	}
}

// claimRef is a PVC of js's namespace by name, as the related object of an Event. Each of these
// Events names other PVCs (or pods), and the events API folds Events of the same regarding,
// related, reason and action into one series that keeps the first one's message: without a
// related object of their own, the PVCs told later would never be seen.
func claimRef(js *jobsetv1alpha2.JobSet, name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: js.Namespace, Name: name}}
}

// releasedBy says what will release a held PVC of js.
func releasedBy(js *jobsetv1alpha2.JobSet) string {
	if ttl := js.Spec.TTLSecondsAfterFinished; ttl != nil {
		return fmt.Sprintf("they are released when those pods are deleted: with the JobSet, %ds after it finishes (spec.ttlSecondsAfterFinished), or with retentionPolicy.finishedPods: Delete", *ttl)
	}
	return "they are released when those pods are deleted: with the JobSet (delete it, or set spec.ttlSecondsAfterFinished), or with retentionPolicy.finishedPods: Delete"
}

// deleteFinished deletes the finished pods of js that hold deleted PVCs, after telling, in one
// Event, how each ended: the pod's status is all that is lost with it (its logs are the node's).
func (r *Reconciler) deleteFinished(ctx context.Context, js *jobsetv1alpha2.JobSet, pods map[types.UID]*corev1.Pod) error {
	if len(pods) == 0 {
		return nil
	}
	list := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		list = append(list, p)
	}
	slices.SortFunc(list, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	var deleted, failed result
	outcomes := make([]string, len(list))
	r.parallel(ctx, len(list), func(i int) {
		p := list[i]
		err := r.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID})
		if err != nil && !apierrors.IsNotFound(err) {
			failed.add(p.Name, fmt.Errorf("deleting pod %s: %w", p.Name, err))
			reconcileErrors.WithLabelValues("delete").Inc()
			addon.CountObject("Pod", addon.ActionFailed, 1)
			return
		}
		outcomes[i] = Outcome(p)
		deleted.add(p.Name, nil)
		podsDeleted.Inc()
		addon.CountObject("Pod", addon.ActionDeleted, 1)
	})
	if n := deleted.count(); n > 0 {
		var told []string
		for _, o := range outcomes {
			if o != "" {
				told = append(told, o)
			}
		}
		ctrl.LoggerFrom(ctx).Info("Deleted finished pods that held PVCs deleted by retention", "count", n, "pods", told)
		first := slices.IndexFunc(outcomes, func(o string) bool { return o != "" })
		addon.Tell(r.Recorder, js, list[first], corev1.EventTypeNormal, ReasonFinishedPodsDeleted, actionDelete,
			"Deleted %d finished pods that held PersistentVolumeClaims deleted by retention (finishedPods: Delete): %s", n, names(told))
	}
	return failed.report(js, r.Recorder, actionDelete)
}

// Outcome is how a finished pod ended, in a few words: its phase, and each container's exit
// code and reason where it is not 0.
func Outcome(p *corev1.Pod) string {
	var bad []string
	for _, s := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		if t := s.State.Terminated; t != nil && t.ExitCode != 0 {
			bad = append(bad, strings.TrimSpace(fmt.Sprintf("%s exit %d %s", s.Name, t.ExitCode, t.Reason)))
		}
	}
	out := p.Name + " " + string(p.Status.Phase)
	if len(bad) > 0 {
		out += " (" + strings.Join(bad, ", ") + ")"
	}
	return out
}

// track records the dropped PVCs of the JobSet key that are Terminating, and returns those
// recorded earlier that no longer exist (gone: released), and those Terminating that were not
// told as held yet.
func (r *Reconciler) track(key types.NamespacedName, uid types.UID, existing map[string]*corev1.PersistentVolumeClaim, terminating map[string]volumeclaims.Claim) (gone []string, notTold sets.Set[string]) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.stateFor(key, uid)
	for name := range p.terminating {
		if _, ok := existing[name]; !ok {
			gone = append(gone, name)
			p.terminating.Delete(name)
			r.told.Unsay(uid, heldKey(name))
			claimsHeld.Dec()
		}
	}
	notTold = sets.New[string]()
	for name := range terminating {
		if !p.terminating.Has(name) {
			p.terminating.Insert(name)
			claimsHeld.Inc()
		}
		if !r.told.Has(uid, heldKey(name)) {
			notTold.Insert(name)
		}
	}
	return gone, notTold
}

// heldKey is what the reconciler tells once (addon.Told) about a held PVC.
func heldKey(name string) string { return ReasonHeld + "/" + name }

// plural is "1 pod", "2 pods".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
