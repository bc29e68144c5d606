// Package kaiapi is the part of KAI Scheduler's PodGroup (scheduling.run.ai/v2alpha2, of
// github.com/NVIDIA/KAI-scheduler pkg/apis/scheduling/v2alpha2) that podgroups writes, written
// here rather than imported: KAI's module requires Kubernetes 1.34, older than the controllers'.
// Fields it does not name (the scheduler's status, the spec fields podgroups leaves alone) are
// kept on the server: podgroups changes a PodGroup with a merge patch of what it changed.
package kaiapi

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SchemeGroupVersion is KAI's PodGroup API.
var SchemeGroupVersion = schema.GroupVersion{Group: "scheduling.run.ai", Version: "v2alpha2"}

// QueueKind is KAI's Queue (cluster-scoped; a PodGroup's spec.queue names one).
var QueueKind = schema.GroupVersionKind{Group: "scheduling.run.ai", Version: "v2", Kind: "Queue"}

// PodGroup is a KAI PodGroup: the pods whose pod-group-name annotation names it are scheduled
// all of minMember or none.
type PodGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PodGroupSpec `json:"spec,omitempty"`
}

// PodGroupSpec is the part of KAI's PodGroupSpec podgroups sets.
type PodGroupSpec struct {
	MinMember         int32      `json:"minMember,omitempty"`
	Queue             string     `json:"queue,omitempty"`
	PriorityClassName string     `json:"priorityClassName,omitempty"`
	SubGroups         []SubGroup `json:"subGroups,omitempty"`
}

// SubGroup is a subset of a PodGroup's pods (their kai.scheduler/subgroup-name label) with a
// minimum of its own.
type SubGroup struct {
	Name      string `json:"name"`
	MinMember int32  `json:"minMember,omitempty"`
}

// PodGroupList is a list of PodGroups.
type PodGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodGroup `json:"items"`
}

// DeepCopyInto copies p into out.
func (p *PodGroup) DeepCopyInto(out *PodGroup) {
	*out = *p
	out.TypeMeta = p.TypeMeta
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if p.Spec.SubGroups != nil {
		out.Spec.SubGroups = append([]SubGroup(nil), p.Spec.SubGroups...)
	}
}

// DeepCopy is a copy of p.
func (p *PodGroup) DeepCopy() *PodGroup {
	if p == nil {
		return nil
	}
	out := new(PodGroup)
	p.DeepCopyInto(out)
	return out
}

// DeepCopyObject is a copy of p.
func (p *PodGroup) DeepCopyObject() runtime.Object { return p.DeepCopy() }

// DeepCopyObject is a copy of l.
func (l *PodGroupList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &PodGroupList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]PodGroup, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}

// AddToScheme registers PodGroup and PodGroupList.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &PodGroup{}, &PodGroupList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
