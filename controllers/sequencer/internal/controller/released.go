package controller

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// withdraw takes back the releases of a suspended JobSet: suspending it (Kueue evicting or
// preempting it) deletes its pods, and its Jobs make new ones, gated again, when it resumes.
// Those must wait for their predecessors to hold again: a Ready predecessor's pods are gone with
// the suspension. So the released annotation is emptied (same attempt), and after the resume
// each stage is released again, and told again, once its predecessors hold; a Complete
// predecessor stays Complete, so its successors are released again at once. podgroups, which
// reads the annotation, deletes the withdrawn stages' PodGroups and makes them again then.
func (r *Reconciler) withdraw(ctx context.Context, js *jobsetv1alpha2.JobSet) error {
	prev, _ := r.previous(js)
	if len(prev.ReplicatedJobs) == 0 {
		return nil
	}
	none := contract.Released{RestartAttempt: prev.RestartAttempt, ReplicatedJobs: []string{}}
	if err := r.patchReleased(ctx, js, none.String()); err != nil {
		return err
	}
	r.remember(js, none)
	ctrl.LoggerFrom(ctx).Info("Withdrew the releases of the suspended JobSet", "replicatedJobs", prev.ReplicatedJobs, "attempt", prev.RestartAttempt)
	addon.Tell(r.Recorder, js, nil, corev1.EventTypeNormal, ReasonReleasesWithdrawn, actionWithdraw,
		"The JobSet is suspended: ReplicatedJobs %s are held again (restart attempt %d); each is released again once its predecessors hold after the JobSet resumes",
		strings.Join(prev.ReplicatedJobs, ", "), prev.RestartAttempt)
	return nil
}

// previous is what is released in the JobSet: its released annotation, with what this process
// wrote last if the cache does not show it yet, and whether it has any.
func (r *Reconciler) previous(js *jobsetv1alpha2.JobSet) (contract.Released, bool) {
	prev, ok := contract.Released{RestartAttempt: -1}, false
	if value, found := js.Annotations[contract.ReleasedAnnotationKey]; found {
		ok = true
		parsed, errs := contract.ParseReleased(value, contract.JobSetAnnotationPath(contract.ReleasedAnnotationKey))
		if len(errs) == 0 { // written by hand otherwise: started again from the Jobs, and overwritten
			prev = parsed
		}
	}
	r.mu.Lock()
	w, wrote := r.written[client.ObjectKeyFromObject(js)]
	r.mu.Unlock()
	if wrote && w.uid == js.UID {
		switch {
		case w.released.RestartAttempt > prev.RestartAttempt:
			prev, ok = w.released, true
		case w.released.RestartAttempt == prev.RestartAttempt:
			prev, ok = prev.With(w.released.ReplicatedJobs...), true
		}
	}
	return prev, ok
}

func (r *Reconciler) remember(js *jobsetv1alpha2.JobSet, released contract.Released) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.written == nil {
		r.written = map[types.NamespacedName]writtenReleased{}
	}
	r.written[client.ObjectKeyFromObject(js)] = writtenReleased{uid: js.UID, released: released}
}

// wrote tells whether this process last wrote value as the JobSet's released annotation.
func (r *Reconciler) wrote(js *jobsetv1alpha2.JobSet, value string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.written[client.ObjectKeyFromObject(js)]
	return ok && w.uid == js.UID && w.released.String() == value
}

func (r *Reconciler) forgetWritten(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.written, key)
}

// patchReleased writes the released annotation, and only it.
func (r *Reconciler) patchReleased(ctx context.Context, js *jobsetv1alpha2.JobSet, value string) error {
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, contract.ReleasedAnnotationKey, value))
	if err := r.Client.Patch(ctx, js.DeepCopy(), patch); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		reconcileErrors.WithLabelValues("patch-jobset").Inc()
		return fmt.Errorf("recording the released ReplicatedJobs: %w", err)
	}
	return nil
}

// recordReleased writes the released annotation when it changed and this process did not write
// it already (the cache is behind); nothing is written for a JobSet with no release yet.
func (r *Reconciler) recordReleased(ctx context.Context, js *jobsetv1alpha2.JobSet, released contract.Released, hadPrev bool) error {
	value := released.String()
	if js.Annotations[contract.ReleasedAnnotationKey] == value || r.wrote(js, value) {
		return nil
	}
	if !hadPrev && len(released.ReplicatedJobs) == 0 {
		return nil
	}
	if err := r.patchReleased(ctx, js, value); err != nil {
		return err
	}
	r.remember(js, released)
	return nil
}
