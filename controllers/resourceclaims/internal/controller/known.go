package controller

import (
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// known is what one reconcile knows of the JobSet's claims: those the cache shows, and those
// this process wrote that the cache does not show as written yet.
type known struct {
	namespace string
	// existing are the claims the cache shows, but for those written (below).
	existing map[string]*resourcev1.ResourceClaim
	// written are the claims this process adopted or deleted that the cache shows as they
	// were: left alone until the cache catches up.
	written sets.Set[string]
	// made are the claims this process created that the cache did not show when read.
	made sets.Set[types.NamespacedName]
	// waiting: some claim waits for the cache to catch up; the reconcile looks again after
	// addon.MadeTTL should no watch event come first.
	waiting bool
}

// known sorts the claims the cache showed (list) and those this process created (made).
func (r *Reconciler) known(js *jobsetv1alpha2.JobSet, list []resourcev1.ResourceClaim, made sets.Set[types.NamespacedName]) *known {
	k := &known{namespace: js.Namespace, existing: make(map[string]*resourcev1.ResourceClaim, len(list)), written: sets.New[string](), made: made}
	for i := range list {
		k.existing[list[i].Name] = &list[i]
	}
	for name, c := range k.existing {
		if r.changed.Pending(c) {
			delete(k.existing, name)
			k.written.Insert(name)
			k.waiting = true
		}
	}
	return k
}

// missing tells whether a claim the cache does not show is to be created: not when this
// process wrote it already. A claim this process created that the cache does not show yet is
// not created again; the watch event of its arrival brings the next reconcile, or, should none
// come, the requeue.
func (k *known) missing(name string) bool {
	if k.written.Has(name) {
		return false
	}
	if k.made.Has(types.NamespacedName{Namespace: k.namespace, Name: name}) {
		k.waiting = true
		return false
	}
	return true
}
