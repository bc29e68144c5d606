package addontest

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// The wrappers below build the objects every add-on's tests make (unit tests and e2e alike):
// each embeds the real object, is changed by chained methods, and ends in Obj(), as upstream
// JobSet's pkg/util/testing and Kueue's test wrappers do. They start from what a user writes,
// with nothing an add-on's webhook would add.

// JobSetWrapper builds a JobSet.
type JobSetWrapper struct{ jobsetv1alpha2.JobSet }

// JobSet is a JobSet named name in namespace ns, without ReplicatedJobs.
func JobSet(ns, name string) *JobSetWrapper {
	return &JobSetWrapper{jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}
}

// Obj is the JobSet built.
func (w *JobSetWrapper) Obj() *jobsetv1alpha2.JobSet { return &w.JobSet }

// Clone is an independent copy of the wrapper, to build variants from one base.
func (w *JobSetWrapper) Clone() *JobSetWrapper { return &JobSetWrapper{*w.DeepCopy()} }

// GenerateName sets metadata.generateName and clears metadata.name, as a mutating webhook sees
// such a JobSet.
func (w *JobSetWrapper) GenerateName(prefix string) *JobSetWrapper {
	w.JobSet.GenerateName, w.JobSet.Name = prefix, ""
	return w
}

// UID sets metadata.uid.
func (w *JobSetWrapper) UID(uid string) *JobSetWrapper {
	w.JobSet.UID = types.UID(uid)
	return w
}

// Annotation sets an annotation of the JobSet.
func (w *JobSetWrapper) Annotation(key, value string) *JobSetWrapper {
	w.JobSet.Annotations = set(w.JobSet.Annotations, key, value)
	return w
}

// Annotate sets the annotations of kv: key, value, key, value...
func (w *JobSetWrapper) Annotate(kv ...string) *JobSetWrapper {
	for i := 0; i+1 < len(kv); i += 2 {
		w.Annotation(kv[i], kv[i+1])
	}
	return w
}

// Annotations sets every annotation of m (a test table's annotations; nil sets none).
func (w *JobSetWrapper) Annotations(m map[string]string) *JobSetWrapper {
	for k, v := range m {
		w.Annotation(k, v)
	}
	return w
}

// InOrder sets the sequencer's execution-policy InOrder: each ReplicatedJob waits for the one
// before it.
func (w *JobSetWrapper) InOrder() *JobSetWrapper {
	return w.Annotation(contract.ExecutionPolicyAnnotationKey, string(contract.ExecutionPolicyInOrder))
}

// VolumeClaimsPolicies sets volumeclaims' policies annotation: value is its YAML list of
// policies.
func (w *JobSetWrapper) VolumeClaimsPolicies(value string) *JobSetWrapper {
	return w.Annotation(contract.PoliciesAnnotationKey, value)
}

// VolumeClaimsAdmitted sets the marker volumeclaims' mutating webhook leaves on a JobSet it
// injected.
func (w *JobSetWrapper) VolumeClaimsAdmitted() *JobSetWrapper {
	return w.Annotation(contract.VolumeClaimsAdmittedAnnotationKey, contract.EnabledValue)
}

// Label sets a label of the JobSet.
func (w *JobSetWrapper) Label(key, value string) *JobSetWrapper {
	w.Labels = set(w.Labels, key, value)
	return w
}

// ReplicatedJobs appends the ReplicatedJobs built by rjs.
func (w *JobSetWrapper) ReplicatedJobs(rjs ...*ReplicatedJobWrapper) *JobSetWrapper {
	for _, rj := range rjs {
		w.Spec.ReplicatedJobs = append(w.Spec.ReplicatedJobs, *rj.Obj())
	}
	return w
}

// Suspend sets spec.suspend.
func (w *JobSetWrapper) Suspend(s bool) *JobSetWrapper {
	w.Spec.Suspend = ptr.To(s)
	return w
}

// MaxRestarts sets the failure policy's maxRestarts.
func (w *JobSetWrapper) MaxRestarts(n int32) *JobSetWrapper {
	w.Spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{MaxRestarts: n}
	return w
}

// ManagedBy sets spec.managedBy.
func (w *JobSetWrapper) ManagedBy(controller string) *JobSetWrapper {
	w.Spec.ManagedBy = ptr.To(controller)
	return w
}

// StartupPolicy sets upstream JobSet's spec.startupPolicy to the order given.
func (w *JobSetWrapper) StartupPolicy(order jobsetv1alpha2.StartupPolicyOptions) *JobSetWrapper {
	w.Spec.StartupPolicy = &jobsetv1alpha2.StartupPolicy{StartupPolicyOrder: order}
	return w
}

// OwnedByTrainJob makes the Kubeflow Trainer TrainJob name the JobSet's controller (UID "u"), as
// Trainer creates the JobSet of a TrainJob.
func (w *JobSetWrapper) OwnedByTrainJob(name string) *JobSetWrapper {
	w.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "trainer.kubeflow.org/v1alpha1", Kind: "TrainJob", Name: name, UID: "u", Controller: ptr.To(true),
	}}
	return w
}

// Restarts sets status.restarts, the restart attempt JobSet is in.
func (w *JobSetWrapper) Restarts(n int32) *JobSetWrapper {
	w.Status.Restarts = n
	return w
}

// Condition adds a status condition of the given type, True.
func (w *JobSetWrapper) Condition(t jobsetv1alpha2.JobSetConditionType) *JobSetWrapper {
	w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{Type: string(t), Status: metav1.ConditionTrue, Reason: string(t)})
	return w
}

// PodTemplate is the pod template of the ReplicatedJob at index i, to edit in place.
func (w *JobSetWrapper) PodTemplate(i int) *corev1.PodTemplateSpec {
	return &w.Spec.ReplicatedJobs[i].Template.Spec.Template
}

func set(m map[string]string, key, value string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[key] = value
	return m
}
