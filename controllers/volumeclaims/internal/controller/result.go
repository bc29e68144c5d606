package controller

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
)

// result collects the names (of PVCs, or pods) of one kind of outcome of a parallel step.
type result struct {
	mu     sync.Mutex
	claims []string
	errs   []error
}

func (r *result) add(name string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.claims = append(r.claims, name)
	if err != nil {
		r.errs = append(r.errs, err)
	}
}

func (r *result) count() int { return len(r.claims) }

// related is the first PVC of the result, the Event's related object. The events API folds
// Events of one regarding object, related object, reason and action into a series that keeps
// the first note; PVCs told of in one Event are never told of again, so each such Event starts
// a series of its own.
func (r *result) related(js *jobsetv1alpha2.JobSet) runtime.Object {
	if len(r.claims) == 0 {
		return nil
	}
	return claimRef(js, r.claims[0])
}

// names lists up to 10 names, for an event message.
func (r *result) names() string {
	const most = 10
	if len(r.claims) <= most {
		return strings.Join(r.claims, ", ")
	}
	return strings.Join(r.claims[:most], ", ") + fmt.Sprintf(" and %d more", len(r.claims)-most)
}

// names lists up to 10 entries, for an Event message.
func names(list []string) string {
	r := result{claims: list}
	return r.names()
}

// report emits one Warning for the failures and returns them joined, so the reconcile retries.
func (r *result) report(js *jobsetv1alpha2.JobSet, rec events.EventRecorder, act string) error {
	if len(r.errs) == 0 {
		return nil
	}
	err := errors.Join(r.errs...)
	addon.Tell(rec, js, r.related(js), corev1.EventTypeWarning, ReasonFailed, act, "%d PersistentVolumeClaims failed: %v", len(r.errs), r.errs[0])
	return err
}
