package kind_test

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/kindbed"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestStartBarrierStagedJobSet: the Trainer shape with real containers: init (1 Job of 2 pods)
// then node (1 Job of 2 pods) once init is Complete (upstream dependsOn), with start-barrier
// JobSet. Each stage gets its own barrier: init's pods line up, node's pods, made only once init
// completed, line up at theirs, and the JobSet completes at its first attempt.
func TestStartBarrierStagedJobSet(t *testing.T) {
	f := framework.NamespacedFeature("start barrier JobSet on a staged JobSet", "a barrier per stage, it completes", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		const name = "staged"
		initRJ := kindbed.Rendezvous(name, "init", 1, 2, 10*time.Second)
		node := kindbed.Rendezvous(name, "node", 1, 2, 10*time.Second)
		node.DependsOn = []jobsetv1alpha2.DependsOn{{Name: "init", Status: jobsetv1alpha2.DependencyComplete}}
		hold := holdInit(map[string]time.Duration{"node-0-1": 15 * time.Second})
		spec := &node.Template.Spec.Template.Spec
		spec.InitContainers = append(spec.InitContainers, hold)
		js := kindbed.JobSet(ns, name, map[string]string{contract.StartBarrierAnnotationKey: string(contract.StartBarrierJobSet)}, 0, initRJ, node)
		end, recs := runRecorded(ctx, t, c, js, 2)
		if end != jobsetv1alpha2.JobSetCompleted || js.Status.Restarts != 0 {
			t.Fatalf("JobSet %s after %d restart(s), want Completed at the first attempt", end, js.Status.Restarts)
		}
		gi := group(recs, "0", func(r *podRecord) bool { return r.rjob == "init" })
		gn := group(recs, "0", func(r *podRecord) bool { return r.rjob == "node" })
		checkLinedUp(t, "stage init", gi, 2)
		checkLinedUp(t, "stage node", gn, 2)
		return ctx
	})
	testenv.Test(t, f)
}
