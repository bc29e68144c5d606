package controller

// What the reconciler follows of each JobSet between reconciles, in memory: what it found and
// told, never what it needs to be right after a restart (that is on the objects).

import (
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// jobSetClaims is what the reconciler follows of one JobSet's PVCs between reconciles.
type jobSetClaims struct {
	uid types.UID
	// users are PVCs of the JobSet's names that the add-on did not make (a user's): its cache,
	// which holds its own PVCs only, never shows them, and they are never created.
	users sets.Set[string]
	// terminating are PVCs that retention deleted and that were seen Terminating, so that
	// their end is told.
	terminating sets.Set[string]
}

// usersOf returns the users' PVCs found of the JobSet key.
func (r *Reconciler) usersOf(key types.NamespacedName, uid types.UID) sets.Set[string] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stateFor(key, uid).users.Clone()
}

// stateFor returns what is followed of the JobSet key, new if it was of an earlier JobSet of
// the same name. r.mu is held.
func (r *Reconciler) stateFor(key types.NamespacedName, uid types.UID) *jobSetClaims {
	if r.claims == nil {
		r.claims = map[types.NamespacedName]*jobSetClaims{}
	}
	p := r.claims[key]
	if p != nil && p.uid != uid {
		r.drop(p)
	}
	if p == nil || p.uid != uid {
		p = &jobSetClaims{uid: uid, users: sets.New[string](), terminating: sets.New[string]()}
		r.claims[key] = p
	}
	return p
}

// foundUsers records that the PVC name of the JobSet key is a user's.
func (r *Reconciler) foundUsers(key types.NamespacedName, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.claims[key]; p != nil {
		p.users.Insert(name)
	}
}

func (r *Reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.claims[key]; p != nil {
		r.drop(p)
	}
	delete(r.claims, key)
	r.waiting.Forget(key)
}

// drop forgets what was followed and told of a JobSet that is gone. r.mu is held.
func (r *Reconciler) drop(p *jobSetClaims) {
	claimsHeld.Sub(float64(p.terminating.Len()))
	r.told.Forget(p.uid)
}
