package contract

import (
	"slices"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ResourceClaimTemplate is one entry of the TemplatesAnnotationKey annotation (JobSet KEP-762
// shape): a DRA ResourceClaim made once per Job and shared by all pods of that Job.
type ResourceClaimTemplate struct {
	// ObjectMeta: name is required, a DNS-1123 label, unique in the annotation; it names the
	// pod-level claim (pod.spec.resourceClaims[].name) and is part of the claim's object name
	// (ResourceClaimName). Labels and annotations are copied to the claim; nothing else may be set.
	metav1.ObjectMeta `json:"metadata"`

	// Spec is the resource.k8s.io/v1 spec of the claim to make. The API server validates it.
	Spec resourcev1.ResourceClaimSpec `json:"spec"`

	// Containers lists the containers (or init containers) that get the claim in
	// resources.claims. nil (omitted, or null): every container. An explicit empty list: none,
	// the claim is only added at pod level (pod.spec.resourceClaims). Names are unique.
	Containers *[]string `json:"containers,omitempty"`

	// WhenJobFinished says what happens to the claim once its Job finished. Default Delete.
	// Retained claims still go away with the Job (owner reference).
	WhenJobFinished RetentionPolicyType `json:"whenJobFinished"`
}

// DefaultWhenJobFinished is the WhenJobFinished of a ResourceClaimTemplate that sets none.
const DefaultWhenJobFinished = RetentionPolicyDelete

// AllContainers tells whether every container of the pod gets the claim.
func (t ResourceClaimTemplate) AllContainers() bool {
	return t.Containers == nil
}

// AppliesToContainer tells whether the named container gets the claim in resources.claims.
func (t ResourceClaimTemplate) AppliesToContainer(name string) bool {
	return t.Containers == nil || slices.Contains(*t.Containers, name)
}

// ParseResourceClaimTemplates parses the value of the TemplatesAnnotationKey annotation, a YAML
// or JSON list of ResourceClaimTemplate, strictly (see README.md), with the defaults filled in.
// path is the annotation's path, ReplicatedJobAnnotationPath(i, TemplatesAnnotationKey) in a
// JobSet, or metadata.annotations[...] in a Job. An empty value or an empty list is refused.
//
// Whether each listed container exists, and whether a template name clashes with a pod-level
// claim of the pod template, needs the JobSet: the caller checks those.
func ParseResourceClaimTemplates(value string, path *field.Path) ([]ResourceClaimTemplate, field.ErrorList) {
	var templates []ResourceClaimTemplate
	decodeErrs := decodeStrict(value, path, &templates)
	var errs field.ErrorList
	if len(decodeErrs) == 0 && len(templates) == 0 {
		errs = append(errs, field.Required(path, "must be a non-empty list of resource claim templates"))
	}
	names := make([]string, len(templates))
	for i := range templates {
		t := &templates[i]
		tp := path.Index(i)
		names[i] = t.Name
		errs = append(errs, validateTemplateMetadata(t.ObjectMeta, tp.Child("metadata"))...)
		if t.Containers != nil {
			errs = append(errs, validateUniqueNames(*t.Containers, tp.Child("containers"), "")...)
		}
		errs = append(errs, defaultRetentionValue(&t.WhenJobFinished, DefaultWhenJobFinished, tp.Child("whenJobFinished"))...)
	}
	seen := map[string]bool{}
	for i, n := range names {
		if n != "" && seen[n] {
			errs = append(errs, field.Duplicate(path.Index(i).Child("metadata", "name"), n))
		}
		seen[n] = true
	}
	return templates, joinErrors(decodeErrs, errs)
}
