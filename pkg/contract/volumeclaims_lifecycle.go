package contract

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The lifecycle fields of VolumeRetentionPolicy beyond whenComplete, whenFailed and whenDeleted:
//
//   - expireAfterUnused: a PVC that a Retain kept (its JobSet finished, or deleted with
//     whenDeleted: Retain) is deleted once no pod has used it for that long. Since when it is
//     unused is the PVC's Unused condition (Kubernetes 1.37, on by default); where Kubernetes
//     sets none, volumeclaims keeps its own clock (VolumeClaimUnusedSinceAnnotationKey). A JobSet
//     that reuses the PVC restarts the clock (VolumeClaimClaimedAtAnnotationKey), and the clock
//     never starts before volumeclaims first saw the PVC (VolumeClaimFirstSeenAnnotationKey): a
//     PVC restored from a backup with an old unused-since is new to it.
//   - whenNodeLost: Recreate gives up a per-pod PVC whose volume can be used on lost nodes
//     only (deleted, or tainted node.kubernetes.io/out-of-service): the PVC is deleted, and
//     made again, empty, for the Job's replacement pod. Keep (the default) waits for the node.
//   - whenNodeUnreachable: Recreate (with whenNodeLost: Recreate) does the same for nodes the
//     add-on has seen NotReady or unreachable for nodeLostGracePeriod; Keep (the default) only
//     tells it: a node behind a partition may still run its pods.

// NodeLostPolicyType says what happens to a per-pod PVC whose volume is on a lost node.
type NodeLostPolicyType string

const (
	// NodeLostRecreate deletes the PVC (and the pod stuck on the lost node), so that the
	// replacement pod gets a new, empty PVC of the same name on another node.
	NodeLostRecreate NodeLostPolicyType = "Recreate"
	// NodeLostKeep keeps the PVC: the pod waits for the node to come back.
	NodeLostKeep NodeLostPolicyType = "Keep"
)

var nodeLostPolicies = []NodeLostPolicyType{NodeLostRecreate, NodeLostKeep}

// Defaults of the lifecycle fields.
const (
	DefaultVolumeWhenNodeLost        = NodeLostKeep
	DefaultVolumeWhenNodeUnreachable = NodeLostKeep
	DefaultVolumeNodeLostGracePeriod = 5 * time.Minute
	// MinVolumeNodeLostGracePeriod is the shortest nodeLostGracePeriod admitted. The node
	// lifecycle controller marks a node unreachable once it missed its heartbeats for its
	// grace (40 to 50 s by default); a shorter wait on top of that would act on a control plane
	// restart or a brief network blip as on a lost machine.
	MinVolumeNodeLostGracePeriod = 30 * time.Second
)

// defaultLifecycle checks expireAfterUnused, whenNodeLost and nodeLostGracePeriod, and fills in
// the defaults of the last two. shared: the policy makes shared PVCs.
func defaultLifecycle(r *VolumeRetentionPolicy, shared bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if d := r.ExpireAfterUnused; d != nil {
		p := path.Child("expireAfterUnused")
		switch {
		case d.Duration <= 0:
			errs = append(errs, field.Invalid(p, d.Duration.String(), "must be a positive duration, such as 72h"))
		case r.WhenComplete != RetentionPolicyRetain && r.WhenFailed != RetentionPolicyRetain && r.WhenDeleted != RetentionPolicyRetain:
			errs = append(errs, field.Invalid(p, d.Duration.String(),
				"expires PVCs that a Retain keeps: set whenComplete, whenFailed or whenDeleted to Retain, or leave expireAfterUnused out"))
		}
	}
	if r.WhenNodeLost == "" {
		r.WhenNodeLost = DefaultVolumeWhenNodeLost
	} else {
		_, e := parseEnum(string(r.WhenNodeLost), path.Child("whenNodeLost"), nodeLostPolicies, nil)
		errs = append(errs, e...)
		if len(e) == 0 && shared && r.WhenNodeLost == NodeLostRecreate {
			errs = append(errs, field.Invalid(path.Child("whenNodeLost"), r.WhenNodeLost,
				"applies to per-pod PVCs: set targetReplicatedJobs, or leave whenNodeLost out"))
		}
	}
	if r.WhenNodeUnreachable == "" {
		r.WhenNodeUnreachable = DefaultVolumeWhenNodeUnreachable
	} else {
		p := path.Child("whenNodeUnreachable")
		_, e := parseEnum(string(r.WhenNodeUnreachable), p, nodeLostPolicies, nil)
		errs = append(errs, e...)
		if len(e) == 0 && r.WhenNodeUnreachable == NodeLostRecreate && r.WhenNodeLost != NodeLostRecreate {
			errs = append(errs, field.Invalid(p, r.WhenNodeUnreachable,
				"gives up the data of nodes that are only unreachable, which needs whenNodeLost: Recreate for nodes that are lost"))
		}
	}
	if r.NodeLostGracePeriod == nil {
		r.NodeLostGracePeriod = &metav1.Duration{Duration: DefaultVolumeNodeLostGracePeriod}
	} else if r.NodeLostGracePeriod.Duration < 0 {
		errs = append(errs, field.Invalid(path.Child("nodeLostGracePeriod"), r.NodeLostGracePeriod.Duration.String(), "must not be negative"))
	}
	return errs
}

// VolumeClaimExpiry tells when pvc expires and since when it is unused, from what volumeclaims
// and Kubernetes wrote on it: ok is false when it has no expiry, or is in use, or nothing says
// since when it is unused, or volumeclaims has not yet seen this PVC (VolumeClaimFirstSeen).
// The clock starts at the latest of: the Unused condition turning True (or, without that
// condition, VolumeClaimUnusedSinceAnnotationKey), the PVC's taking by its JobSet
// (VolumeClaimClaimedAtAnnotationKey) and volumeclaims' first sight of it.
func VolumeClaimExpiry(pvc *corev1.PersistentVolumeClaim) (at, since time.Time, ok bool) {
	after, err := time.ParseDuration(pvc.Annotations[VolumeClaimExpireAfterUnusedAnnotationKey])
	if err != nil || after <= 0 {
		return time.Time{}, time.Time{}, false
	}
	if _, seen := VolumeClaimFirstSeen(pvc); !seen {
		return time.Time{}, time.Time{}, false
	}
	since, ok = VolumeClaimUnusedSince(pvc)
	if !ok {
		return time.Time{}, time.Time{}, false
	}
	return since.Add(after), since, true
}

// VolumeClaimFirstSeenValue is the value of VolumeClaimFirstSeenAnnotationKey: the time
// (RFC 3339) volumeclaims first saw the PVC of uid.
func VolumeClaimFirstSeenValue(at time.Time, uid types.UID) string {
	return at.UTC().Format(time.RFC3339) + " " + string(uid)
}

// VolumeClaimFirstSeen tells when volumeclaims first saw pvc (VolumeClaimFirstSeenAnnotationKey):
// ok is false when nothing says, or what it says is of another object of the same name (a PVC
// restored from a backup is a new object, with a new UID, whatever its annotations say).
func VolumeClaimFirstSeen(pvc *corev1.PersistentVolumeClaim) (time.Time, bool) {
	at, uid, found := strings.Cut(pvc.Annotations[VolumeClaimFirstSeenAnnotationKey], " ")
	if !found || uid == "" || types.UID(uid) != pvc.UID {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, at)
	return t, err == nil
}

// VolumeClaimUnusedSince tells since when no pod uses pvc, as VolumeClaimExpiry counts it.
func VolumeClaimUnusedSince(pvc *corev1.PersistentVolumeClaim) (time.Time, bool) {
	var since time.Time
	if c := UnusedCondition(pvc); c != nil {
		if c.Status != corev1.ConditionTrue {
			return time.Time{}, false
		}
		since = c.LastTransitionTime.Time
	} else {
		t, err := time.Parse(time.RFC3339, pvc.Annotations[VolumeClaimUnusedSinceAnnotationKey])
		if err != nil {
			return time.Time{}, false
		}
		since = t
	}
	if t, err := time.Parse(time.RFC3339, pvc.Annotations[VolumeClaimClaimedAtAnnotationKey]); err == nil && t.After(since) {
		since = t
	}
	if t, ok := VolumeClaimFirstSeen(pvc); ok && t.After(since) {
		since = t
	}
	return since, true
}

// UnusedCondition is the PVC's Unused condition, or nil where Kubernetes sets none.
func UnusedCondition(pvc *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaimCondition {
	for i := range pvc.Status.Conditions {
		if pvc.Status.Conditions[i].Type == corev1.PersistentVolumeClaimUnused {
			return &pvc.Status.Conditions[i]
		}
	}
	return nil
}
