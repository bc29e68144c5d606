package backend

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Meta is an empty object's metadata of kind gvk, the form in which the cache holds ours: the
// reconciler reads only their names, labels, spec hash and owners, and decoding whole PodGroups
// (with the scheduler's status) on every watch event costs the controller and the API server
// CPU.
func Meta(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	return m
}

// MetaList is an empty list of the metadata of objects of kind gvk.
func MetaList(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	return l
}

// Ours tells whether an object on the server is one podgroups made for this JobSet: our
// managed-by label and the JobSet as controller.
func Ours(o client.Object, js *jobsetv1alpha2.JobSet) bool {
	if o.GetLabels()[contract.ManagedByLabelKey] != contract.PodGroupsManagedByValue {
		return false
	}
	ref := metav1.GetControllerOfNoCopy(o)
	return ref != nil && ref.UID == js.UID
}

// ourLabels are the labels of what podgroups makes for the JobSet: managed-by, the JobSet's
// name, and, on a sequenced JobSet's PodGroup, the stage.
func ourLabels(js *jobsetv1alpha2.JobSet, g *podgroups.Gang) map[string]string {
	labels := map[string]string{
		contract.ManagedByLabelKey:  contract.PodGroupsManagedByValue,
		contract.JobSetNameLabelKey: js.Name,
	}
	if g != nil && g.Sequenced {
		labels[contract.PodGroupStageLabelKey] = podgroups.StageLabel(g.Stage.Index)
	}
	return labels
}

// stamp makes o, whose spec is set, gang g's object of the JobSet: its name (when g is not nil),
// namespace, our labels, the hash of spec and labels, and the JobSet as controller owner.
func stamp[T client.Object](o T, js *jobsetv1alpha2.JobSet, g *podgroups.Gang, spec any) T {
	if g != nil {
		o.SetName(g.Name)
	}
	o.SetNamespace(js.Namespace)
	o.SetLabels(ourLabels(js, g))
	o.SetAnnotations(map[string]string{contract.PodGroupSpecHashAnnotationKey: hash(spec, o.GetLabels())})
	o.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(js, jobsetv1alpha2.GroupVersion.WithKind("JobSet"))})
	return o
}

// AdoptMeta copies want's labels and annotations into have, keeping have's others.
func AdoptMeta(have, want client.Object) {
	labels := maps.Clone(have.GetLabels())
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, want.GetLabels())
	have.SetLabels(labels)
	ann := maps.Clone(have.GetAnnotations())
	if ann == nil {
		ann = map[string]string{}
	}
	maps.Copy(ann, want.GetAnnotations())
	have.SetAnnotations(ann)
}

func hash(spec any, labels map[string]string) string {
	b, err := json.Marshal(struct {
		Spec   any               `json:"spec"`
		Labels map[string]string `json:"labels"`
	}{spec, labels})
	if err != nil {
		panic(fmt.Sprintf("hashing a PodGroup spec: %v", err))
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	return fmt.Sprintf("%016x", h.Sum64())
}

// describe writes a ResourceList as cpu=4,memory=8Gi, sorted by name.
func describe(l corev1.ResourceList) string {
	if len(l) == 0 {
		return "none"
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(l)) {
		q := l[name]
		parts = append(parts, fmt.Sprintf("%s=%s", name, q.String()))
	}
	return strings.Join(parts, ",")
}
