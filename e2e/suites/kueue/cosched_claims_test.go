package kueue_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/testbed"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// schedulerPluginsVersion is the version of the coscheduling scheduler the testbed runs: the
// directory bin/testbed/sp-scheduler links into (bin/scheduler-plugins-<version>).
func schedulerPluginsVersion() string {
	target, err := os.Readlink(tb.Bin("sp-scheduler"))
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(filepath.Base(filepath.Dir(target)), "scheduler-plugins-")
}

// TestCoschedulingClaims: a JobSet with all four add-ons whose gangs are coscheduling's
// (scheduler-plugins' scheduler, a second scheduler), queued by Kueue: that scheduler allocates
// the per-Job claims resourceclaims makes (its DynamicResources plugin, resource.k8s.io/v1) and
// binds each stage's gang whole; the JobSet completes. scheduler-plugins v0.33.5 is built on
// Kubernetes 1.33, without resource.k8s.io/v1 and with DRA off: it cannot, and the test says
// so and stops.
func TestCoschedulingClaims(t *testing.T) {
	testenv.Test(t, feature("coscheduling-claims", "coscheduling allocates the per-Job claims of a queued JobSet and binds its gangs",
		func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if v := schedulerPluginsVersion(); strings.HasPrefix(v, "v0.33.") {
				t.Skipf("scheduler-plugins %s: built on Kubernetes 1.33 (no resource.k8s.io/v1), it allocates no DRA claim", v)
			}
			c := framework.Client(t, cfg)
			ns := framework.NamespaceFrom(ctx)
			q := makeQueues(ctx, t, c, ns, queueOptions{cpu: "5"})
			s := shape{name: "cosched", queue: q.localQueue, all: true, scheduler: contract.SchedulerCoscheduling,
				initRun: "2s", trainRun: "6s", trainJobs: 2, trainPods: 2, cpu: "1"}
			js := s.jobSet(t, ns)
			framework.CreateAll(ctx, t, c, js)
			waitWorkload(ctx, t, c, js, "Admitted", time.Minute)
			framework.Eventually(ctx, t, time.Minute, "claims allocated by coscheduling's scheduler", func(ctx context.Context) (bool, string, error) {
				rc, err := claims(ctx, c, js)
				if err != nil {
					return false, err.Error(), nil
				}
				n := 0
				for _, cl := range rc {
					if cl.Status.Allocation != nil {
						n++
					}
				}
				return n == len(s.claimNames()), fmt.Sprintf("%d of %d allocated", n, len(rc)), nil
			})
			jobSetDone(ctx, t, c, js, 2*time.Minute)
			ps, err := pods(ctx, c, js)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ps {
				if p.Spec.SchedulerName != testbed.CoschedulingSchedulerName {
					t.Errorf("pod %s: schedulerName %q, want %q", p.Name, p.Spec.SchedulerName, testbed.CoschedulingSchedulerName)
				}
				if p.Labels[contract.ReplicatedJobNameLabelKey] == "train" && len(p.Spec.ResourceClaims) != 1 {
					t.Errorf("train pod %s: resourceClaims %+v", p.Name, p.Spec.ResourceClaims)
				}
			}
			framework.WaitEventCounts(ctx, t, c, js, map[string]int{"StageReleased": 1, "PodGroupCreated": 2})
			return ctx
		}))
}
