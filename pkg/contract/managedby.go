package contract

// ManagedElsewhere tells whether a JobSet whose spec.managedBy is managedBy (nil: unset) is not
// this cluster's to act on: managedBy is set and is not JobSet's own controller
// (JobSetControllerManagedBy). Upstream JobSet's controller leaves such a JobSet alone, and so
// does every add-on: none makes, adopts or deletes anything for it, the sequencer releases
// nothing and writes no annotation, podgroups makes no gang. MultiKueue's manager cluster keeps
// such a copy (`kueue.x-k8s.io/multikueue`) while the JobSet runs in a worker cluster, where
// MultiKueue creates it with spec.managedBy cleared and the add-ons there act on it.
func ManagedElsewhere(managedBy *string) bool {
	return managedBy != nil && *managedBy != JobSetControllerManagedBy
}
