package volumeclaims

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// DryRuns are the PVCs for the API server to judge (the webhook's dry runs, lint's offline
// validation): for each template without a problem of its own in errs, the first PVC it gives,
// as the reconciler makes it (with the owner reference only when the JobSet has its UID yet),
// under the template's path, with whose a PVC of its name may be (Claim.Identity): one of that
// name that another JobSet's policies made refuses the JobSet. Its spec is the template's
// (addon.DryRun.TemplateSpec): a field of it the API server drops is warned of. A JobSet
// without a name (generateName) has none: its PVCs cannot be named, and validation refuses it.
func (p *Parsed) DryRuns(js *jobsetv1alpha2.JobSet, errs field.ErrorList) []addon.DryRun {
	if js.Name == "" || !p.Present || len(p.Errs) > 0 && len(p.Policies) == 0 {
		return nil
	}
	var out []addon.DryRun
	for i := range p.Policies {
		for j := range p.Policies[i].Templates {
			t := &p.Policies[i].Templates[j]
			tp := AnnotationPath.Index(i).Child("templates").Index(j)
			if hasErrorAt(errs, tp) {
				continue
			}
			k := slices.IndexFunc(p.Claims, func(c Claim) bool { return c.Policy == i && c.Template.Name == t.Name })
			if k < 0 {
				continue // no ReplicatedJob mounts it: told
			}
			pvc := p.Claims[k].PVC(js)
			if js.UID == "" {
				pvc.OwnerReferences = nil
			}
			key := addon.TemplateKey(js.Namespace, t.Labels, t.Annotations, t.Spec)
			id := p.Claims[k].Identity(js)
			out = append(out, addon.DryRun{Path: tp, What: "the PersistentVolumeClaim " + pvc.Name, Object: pvc, Key: key, Identity: &id, TemplateSpec: true})
		}
	}
	return out
}

// Taken refuses, at the path of its template, each PVC of js's names that is in existing (the
// add-on's PVCs of the namespace, by name) and is another JobSet's (contract.Identity.Of), at
// every index: once per template. A template with a problem of its own in errs is not looked at.
func (p *Parsed) Taken(js *jobsetv1alpha2.JobSet, existing map[string]*corev1.PersistentVolumeClaim, errs field.ErrorList) field.ErrorList {
	var out field.ErrorList
	for _, c := range p.Claims {
		pvc, ok := existing[c.Name]
		if !ok {
			continue
		}
		j := slices.IndexFunc(p.Policies[c.Policy].Templates, func(t corev1.PersistentVolumeClaim) bool { return t.Name == c.Template.Name })
		tp := AnnotationPath.Index(c.Policy).Child("templates").Index(j)
		if hasErrorAt(errs, tp) || hasErrorAt(out, tp) {
			continue
		}
		if id := c.Identity(js); id.Of(pvc) == contract.Foreign {
			out = append(out, field.Invalid(tp, field.OmitValueType{}, addon.Taken("the PersistentVolumeClaim "+c.Name, id.Holder(pvc))))
		}
	}
	return out
}

// hasErrorAt tells whether errs has an error at path or under it.
func hasErrorAt(errs field.ErrorList, path *field.Path) bool {
	p := path.String()
	return slices.ContainsFunc(errs, func(e *field.Error) bool {
		return e.Field == p || strings.HasPrefix(e.Field, p+".") || strings.HasPrefix(e.Field, p+"[")
	})
}
