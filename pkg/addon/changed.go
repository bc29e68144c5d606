package addon

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// ChangesOf passes an object's creation and deletion, and of its updates those that change what
// a reconcile goes by: its spec (the generation), labels, annotations, owner references, its
// deletion, or state, what the add-on reads of its status (a string that changes when that
// does; nil: none of it). The status writes an add-on does not read are many: JobSet's
// controller writes a running JobSet's status at each change of its Jobs' counts, the Job
// controller a Job's at each change of its pods', the scheduler a ResourceClaim's as it
// allocates and reserves it. A reconcile for each reads and plans the whole JobSet again.
func ChangesOf[T client.Object](state func(T) string) predicate.Predicate {
	return predicate.Or[client.Object](
		predicate.GenerationChangedPredicate{},
		predicate.LabelChangedPredicate{},
		predicate.AnnotationChangedPredicate{},
		predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			before, ok := e.ObjectOld.(T)
			after, ok2 := e.ObjectNew.(T)
			if !ok || !ok2 {
				return true
			}
			return !before.GetDeletionTimestamp().Equal(after.GetDeletionTimestamp()) ||
				!equality.Semantic.DeepEqual(before.GetOwnerReferences(), after.GetOwnerReferences()) ||
				(state != nil && state(before) != state(after))
		}},
	)
}
