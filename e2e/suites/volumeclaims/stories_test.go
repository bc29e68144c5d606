package volumeclaims_test

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
)

// TestStories applies the KEP-572 stories of examples/volumeclaims and checks the PVCs they
// get, that each pod mounts its own, and what retention leaves when the JobSet completes.
func TestStories(t *testing.T) {
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	concat := func(lists ...[]string) []string {
		var out []string
		for _, l := range lists {
			out = append(out, l...)
		}
		return out
	}
	for _, st := range []struct {
		file, ns, jobSet string
		perPod           map[string][]string // ReplicatedJob -> per-pod templates
		shared           map[string]string   // template -> shared PVC
		want             []string            // every PVC
		wantKept         []string            // the PVCs retention keeps after completion
		minJobSet, why   string              // the oldest JobSet the story runs on, and why
	}{{
		file: "story1-per-worker-checkpoints.yaml", ns: "default", jobSet: "distributed-trainjob",
		perPod:   map[string][]string{"node": {"checkpoint-storage"}},
		want:     perPodNames("checkpoint-storage", "distributed-trainjob", "node", 4, 2),
		wantKept: perPodNames("checkpoint-storage", "distributed-trainjob", "node", 4, 2),
	}, {
		file: "story2-shared-initializer.yaml", ns: "default", jobSet: "trainjob-qwen2-5",
		shared:    map[string]string{"initializer": "initializer-trainjob-qwen2-5"},
		want:      []string{"initializer-trainjob-qwen2-5"},
		minJobSet: framework.DependsOnFanInSince,
		why:       "the story's upstream dependsOn names two predecessors; JobSet v0.8.0's CRD allows one (dependsOn maxItems: 1)",
	}, {
		file: "story3-hybrid.yaml", ns: "default", jobSet: "hybrid-training",
		perPod: map[string][]string{"data-loader": {"worker-scratch"}, "trainer": {"worker-scratch"}},
		shared: map[string]string{"dataset-cache": "dataset-cache-hybrid-training", "results-storage": "results-storage-hybrid-training"},
		want: concat([]string{"dataset-cache-hybrid-training", "results-storage-hybrid-training"},
			perPodNames("worker-scratch", "hybrid-training", "data-loader", 4, 1),
			perPodNames("worker-scratch", "hybrid-training", "trainer", 3, 6)),
		wantKept: concat(perPodNames("worker-scratch", "hybrid-training", "data-loader", 4, 1),
			perPodNames("worker-scratch", "hybrid-training", "trainer", 3, 6)),
	}, {
		file: "story4-hpc.yaml", ns: "hpc", jobSet: "hpc-simulation",
		perPod:   map[string][]string{"compute-node": {"simulation-data"}},
		want:     perPodNames("simulation-data", "hpc-simulation", "compute-node", 16, 1),
		wantKept: perPodNames("simulation-data", "hpc-simulation", "compute-node", 16, 1),
	}} {
		f := features.New(st.file).
			Assess("PVCs Bound, mounted by index, retained by policy", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
				if st.minJobSet != "" {
					framework.RequireJobSet(t, st.minJobSet, st.why)
				}
				c := framework.Client(t, cfg)
				objs := framework.Objects(t, filepath.Join(root, "examples", "volumeclaims", st.file))
				var js *jobsetv1alpha2.JobSet
				for _, o := range objs {
					if j, ok := o.(*jobsetv1alpha2.JobSet); ok {
						js = j
						delay(js, "4s")
					}
				}
				framework.CreateAll(ctx, t, c, objs...)
				t.Cleanup(func() {
					_ = c.Delete(context.Background(), js, client.PropagationPolicy("Background"))
					_ = c.DeleteAllOf(context.Background(), &corev1.PersistentVolumeClaim{}, client.InNamespace(st.ns), client.MatchingLabels{"jobset.sigs.k8s.io/jobset-name": st.jobSet})
				})
				uids := waitClaimsBound(ctx, t, c, st.ns, st.jobSet, st.want)
				framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
				pods := checkPodVolumes(ctx, t, c, st.ns, st.jobSet, st.perPod, st.shared)
				var gone []string
				kept := map[string]bool{}
				for _, n := range st.wantKept {
					kept[n] = true
				}
				for _, n := range st.want {
					if !kept[n] {
						gone = append(gone, n)
					}
				}
				waitClaimsDeleted(ctx, t, c, st.ns, st.jobSet, gone) // held by the finished pods: the examples keep them
				keptUIDs := map[string]types.UID{}
				for _, n := range st.wantKept {
					keptUIDs[n] = uids[n]
				}
				expectClaimsStay(ctx, t, c, st.ns, st.jobSet, keptUIDs)
				// The kubectl plugin shows the same, found through the contract's labels.
				status := framework.AddonsStatus(ctx, t, cfg, st.ns, st.jobSet)
				for _, n := range st.wantKept {
					if !regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(n) + `\s+Bound\s`).MatchString(status) {
						t.Errorf("kubectl jobset-addons status: no Bound row for %s:\n%s", n, status)
					}
				}
				if !strings.Contains(status, "VolumeClaimsCreated") || !strings.Contains(status, "JobSet "+st.ns+"/"+st.jobSet+": Completed") {
					t.Errorf("kubectl jobset-addons status: no VolumeClaimsCreated event or Completed state:\n%s", status)
				}
				t.Logf("%s: %d PVCs Bound, %d pods checked, %d deleted and %d kept on completion", st.jobSet, len(st.want), pods, len(gone), len(st.wantKept))
				return ctx
			}).Feature()
		testenv.Test(t, f)
	}
	testenv.Test(t, metricsFeature())
}
