package addon

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// DefaultForgetEvery is how often ForgetGone looks for objects that are gone.
const DefaultForgetEvery = 10 * time.Minute

// ForgetGone makes told forget, once every `every`, what it remembers about objects that are
// gone. Without it, a JobSet deleted while the controller was down, or whose deletion it never
// saw (the reconcile that finds it not found knows its name, not its UID), would be remembered
// for as long as the process lives. The objects still alive are those of kinds (the lists of
// the kinds whose UIDs told keys on: JobSets, and Jobs where it keys Jobs) in the manager's
// cache, which holds them already; Told.Prune forgets an object missing from two lists in a
// row. It runs on the leader, the replica whose reconcilers tell.
func ForgetGone(mgr manager.Manager, every time.Duration, told *Told, kinds ...client.ObjectList) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		wait.UntilWithContext(ctx, func(ctx context.Context) {
			alive, err := aliveUIDs(ctx, mgr.GetCache(), kinds)
			if err != nil {
				logf.FromContext(ctx).V(2).Info("Could not list the objects alive; nothing forgotten", "err", err)
				return
			}
			if n := told.Prune(alive.Has); n > 0 {
				logf.FromContext(ctx).V(2).Info("Forgot what was told about objects that are gone", "objects", n)
			}
		}, every)
		return nil
	}))
}

// aliveUIDs are the UIDs of every object of kinds in c.
func aliveUIDs(ctx context.Context, c client.Reader, kinds []client.ObjectList) (sets.Set[types.UID], error) {
	alive := sets.New[types.UID]()
	for _, list := range kinds {
		list = list.DeepCopyObject().(client.ObjectList)
		if err := c.List(ctx, list); err != nil {
			return nil, fmt.Errorf("listing %T: %w", list, err)
		}
		if err := meta.EachListItem(list, func(o runtime.Object) error {
			if m, err := meta.Accessor(o); err == nil {
				alive.Insert(m.GetUID())
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return alive, nil
}
