package contract

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Ownership is whose an existing object of a name an add-on makes for a JobSet is, as that
// JobSet sees it (Identity.Of). Names are joined with "-" and so coincide across JobSets
// (JobSet gpt's ReplicatedJob eval-worker and JobSet gpt-eval's ReplicatedJob worker make the
// same per-pod PVC name): a name alone never makes an object a JobSet's.
type Ownership int

const (
	// Unmanaged: the add-on did not make it (no managed-by label of the add-on's): a user's
	// object, which the add-on uses as it is where its docs say so, and never changes or
	// deletes.
	Unmanaged Ownership = iota
	// Own: made for this JobSet: the add-on's labels name this JobSet and the part of it the
	// object serves, and the UID it carries is this JobSet's.
	Own
	// Retained: left by an earlier JobSet of the same name for the same part of it (the same
	// labels: template, ReplicatedJob, indexes, stage), with another UID or none. The JobSet
	// takes it over only when it uses that very part; otherwise it leaves it as it is, with
	// its retention and expiry.
	Retained
	// Foreign: made by the add-on for another JobSet, or for another part of this one. Never
	// used, adopted, changed or deleted for this JobSet: admission refuses the JobSet that
	// would collide with it, and a collision found later is told.
	Foreign
)

// VolumeClaimPartLabelKeys are the labels by which volumeclaims names the part of a JobSet a
// PVC serves (Identity.Parts): a shared PVC carries the template only, a per-pod PVC all four.
var VolumeClaimPartLabelKeys = []string{
	VolumeClaimTemplateLabelKey, VolumeClaimReplicatedJobLabelKey, VolumeClaimJobIndexLabelKey, VolumeClaimPodIndexLabelKey,
}

func (o Ownership) String() string {
	switch o {
	case Own:
		return "own"
	case Retained:
		return "retained"
	case Foreign:
		return "foreign"
	}
	return "unmanaged"
}

// Identity is what an add-on writes on an object it makes for a JobSet to say whose it is:
// its managed-by value, the JobSet's name (JobSetNameLabelKey) and UID (in the annotation
// UIDKey), and the labels of the part of the JobSet it serves.
type Identity struct {
	// ManagedBy is the add-on's ManagedByLabelKey value.
	ManagedBy string
	// JobSet is the JobSet's name.
	JobSet string
	// UID is the JobSet's UID; empty before the API server gave it one (at admission), when no
	// object can be its own yet.
	UID types.UID
	// UIDKey is the annotation in which the add-on writes the UID of what it made the object
	// for; empty: the UID of the object's controller reference (podgroups' PodGroups are
	// controlled by their JobSet, resourceclaims' claims by their Job).
	UIDKey string
	// Labels are the add-on's labels that name the part of the JobSet the object serves
	// (VolumeClaimTemplateLabelKey, VolumeClaimReplicatedJobLabelKey, ...): an object of the
	// add-on's must carry each with this value, and no other key of Parts.
	Labels map[string]string
	// Parts are every label key by which the add-on names a part of a JobSet on this kind of
	// object. A key of Parts that Labels leaves out must be absent from the object (a shared
	// PVC carries no ReplicatedJob).
	Parts []string
}

// Of tells whose obj, an existing object of a name the add-on makes for Identity's JobSet, is.
// It reads only obj's labels and annotations: the same answer in the reconciler, the admission
// dry run, the Pod webhook and expiry.
func (id Identity) Of(obj metav1.Object) Ownership {
	l := obj.GetLabels()
	if l[ManagedByLabelKey] != id.ManagedBy {
		return Unmanaged
	}
	if l[JobSetNameLabelKey] != id.JobSet {
		return Foreign
	}
	for _, k := range id.Parts {
		want, wanted := id.Labels[k]
		got, has := l[k]
		if wanted != has || want != got {
			return Foreign
		}
	}
	for k, want := range id.Labels {
		if got, ok := l[k]; !ok || got != want {
			return Foreign
		}
	}
	if id.UID != "" && id.uidOf(obj) == id.UID {
		return Own
	}
	return Retained
}

func (id Identity) uidOf(obj metav1.Object) types.UID {
	if id.UIDKey != "" {
		return types.UID(obj.GetAnnotations()[id.UIDKey])
	}
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		return ref.UID
	}
	return ""
}

// Holder names the JobSet an object of the add-on's was made for, and the part of it, for a
// refusal or an Event: `JobSet gpt (uid ...) for job-index=0, pod-index=0, replicatedjob=eval-worker,
// template=ckpt`, or `an object not made by ADDON` for an unmanaged one.
func (id Identity) Holder(obj metav1.Object) string {
	l := obj.GetLabels()
	if l[ManagedByLabelKey] != id.ManagedBy {
		return "an object not made by " + id.ManagedBy
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		if slices.Contains(id.Parts, k) {
			parts = append(parts, fmt.Sprintf("%s=%s", k[strings.LastIndex(k, "/")+1:], l[k]))
		}
	}
	s := "no JobSet"
	if name := l[JobSetNameLabelKey]; name != "" {
		s = "JobSet " + name
	}
	if uid := id.uidOf(obj); uid != "" {
		s += " (uid " + string(uid) + ")"
	}
	if len(parts) > 0 {
		s += " for " + strings.Join(parts, ", ")
	}
	return s
}
