package podgroups_test

import (
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestGangNameTaken: names are joined with "-", so stage 0 of the sequenced JobSet train and
// the JobSet train-stage-0 (not sequenced) both give the PodGroup train-stage-0. While train's
// is there, train-stage-0 is refused at the scheduler annotation, naming JobSet train; train's
// PodGroup is left as it was.
func TestGangNameTaken(t *testing.T) {
	f := framework.NamespacedFeature("a gang name another JobSet holds is refused", "refused, naming the JobSet", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		s := contract.SchedulerCoscheduling
		train := newJobSet(ns, "train", s).InOrder().
			ReplicatedJobs(replicated("init", 1, 2, "30s"), replicated("main", 1, 2, "3s")).Obj()
		framework.CreateAll(ctx, t, c, train)
		checkPodGroup(ctx, t, c, ns, "train-stage-0", s, 2)
		other := newJobSet(ns, "train-stage-0", s).ReplicatedJobs(replicated("w", 1, 2, "3s")).Obj()
		err := c.Create(ctx, other)
		if err == nil {
			t.Fatal("JobSet train-stage-0 admitted; want it refused: its PodGroup train-stage-0 is JobSet train's stage 0")
		}
		if !strings.Contains(err.Error(), "PodGroup train-stage-0 exists and was made for JobSet train ") {
			t.Errorf("the refusal does not name the PodGroup and its JobSet: %v", err)
		}
		paths, _ := framework.CausePaths(err)
		if want := annotationPath(contract.SchedulerAnnotationKey); len(paths) != 1 || paths[0] != want {
			t.Errorf("refused at %q, want at %s", paths, want)
		}
		checkPodGroup(ctx, t, c, ns, "train-stage-0", s, 2)
		return ctx
	})
	testenv.Test(t, f)
}
