package webhook

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/backend"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// DryRunRemember is how long the JobSet webhook treats a gang object that the API server
// accepted in a namespace as accepted for the same object of another JobSet
// (addon.DryRunner.Remember).
const DryRunRemember = 10 * time.Second

// dryRuns are the gang objects for the API server to check (addon.DryRunner), as the reconciler
// makes them: the Workload of a backend that makes one (its PodGroups are made from its
// templates, and name it), else each gang's PodGroup. They come from the gang settings, so a
// refusal is told at the scheduler annotation, and so is one of the name another JobSet's gang
// holds (identity). The owner reference goes only once the JobSet has its UID; a JobSet
// without a name (generateName) has none.
func (w *JobSetWebhook) dryRuns(js *jobsetv1alpha2.JobSet, b backend.Backend, s podgroups.Settings, gangs []podgroups.Gang) []addon.DryRun {
	if js.Name == "" || len(gangs) == 0 {
		return nil
	}
	path := contract.JobSetAnnotationPath(contract.SchedulerAnnotationKey)
	class := func(g podgroups.Gang) string {
		pc, _ := g.PriorityClass(w.Classes)
		return pc
	}
	var objs []client.Object
	if wb, ok := b.(backend.Workloads); ok {
		wl, err := wb.BuildWorkload(js, gangs, s, class)
		if err != nil {
			return nil // refused by the backend's own checks already
		}
		objs = append(objs, wl)
	} else {
		for _, g := range gangs {
			objs = append(objs, b.Build(js, g, s, class(g), w.DefaultQueue))
		}
	}
	out := make([]addon.DryRun, 0, len(objs))
	for _, o := range objs {
		if js.UID == "" {
			o.SetOwnerReferences(nil)
		}
		out = append(out, addon.DryRun{Path: path, What: "the " + kindOf(b, o) + " " + o.GetName(), Object: o, Key: dryRunKey(o), Identity: identity(js, o)})
	}
	return out
}

// identity is whose an existing object of o's name must be for the JobSet not to be refused
// (backend.Identity): an object of the name that another JobSet's gang holds refuses the
// JobSet, naming that JobSet; one a user made, or one an earlier JobSet of this name left (the
// garbage collector's to delete), does not.
func identity(js *jobsetv1alpha2.JobSet, o client.Object) *contract.Identity {
	id := backend.Identity(js, o.GetLabels())
	return &id
}

// kindOf names o in a Warning.
func kindOf(b backend.Backend, o client.Object) string {
	if _, ok := b.(backend.Workloads); ok {
		return "Workload"
	}
	return string(b.Scheduler()) + " PodGroup"
}

// dryRunKey is what the object's acceptance depends on besides its name and the JobSet's
// labels: the namespace and the rest of the object (addon.TemplateKey).
func dryRunKey(o client.Object) string {
	c, ok := o.DeepCopyObject().(client.Object)
	if !ok {
		return ""
	}
	c.SetName("")
	c.SetLabels(nil)
	c.SetAnnotations(nil)
	c.SetOwnerReferences(nil)
	return addon.TemplateKey(o.GetNamespace(), nil, nil, c)
}
