package chaos_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestLeaderFailover kills the leader of each add-on with SIGKILL while JobSets of the mix run,
// with the default lease settings (lease 8 s, renew deadline 6 s, retry 1 s), and measures how
// long until the other replica holds the Lease, and until it acts: makes the object that a
// JobSet created at the moment of the kill needs. Nothing may be created twice meanwhile.
func TestLeaderFailover(t *testing.T) {
	f := features.New("leader failover").Assess("the other replica takes over and acts", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		if err := waitProbe(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		c := framework.Client(t, cfg)
		ns := newNamespace(ctx, t, c, "failover")
		since := time.Now()
		// The load: a JobSet of the mix every 500 ms until the last add-on is done.
		load, stopLoad := context.WithCancel(ctx)
		loaded := make(chan int)
		go func() {
			n := 0 // JobSets created
			defer func() { loaded <- n }()
			for load.Err() == nil {
				if _, _, err := createRetrying(load, c, mixJobSet(ns, n), time.Minute); err != nil {
					if load.Err() == nil {
						t.Errorf("load: %v", err)
					}
					return
				}
				n++
				time.Sleep(500 * time.Millisecond)
			}
		}()
		time.Sleep(3 * time.Second)

		type result struct{ lease, acted time.Duration }
		results := map[string]result{}
		for k, name := range framework.Addons {
			r := replicas[name]
			leader := waitLeader(ctx, t, r)
			oldHolder := leaseHolder(ctx, t, c, name)
			js := mixJobSet(ns, 1000+k*shapes+map[string]int{"volumeclaims": 0, "resourceclaims": 0, "sequencer": 1, "podgroups": 1}[name])
			killed := time.Now()
			if err := r.Kill(leader); err != nil {
				t.Fatal(err)
			}
			if _, _, err := createRetrying(ctx, c, js, time.Minute); err != nil {
				t.Fatal(err)
			}
			var res result
			from := killed // the sequencer can act only once the first stage completed
			framework.Eventually(ctx, t, time.Minute, name+" takes over and acts", func(ctx context.Context) (bool, string, error) {
				if res.lease == 0 {
					if h := leaseHolder(ctx, t, c, name); h != "" && h != oldHolder {
						res.lease = time.Since(killed)
					}
				}
				acted, msg := actedOn(ctx, c, name, js, &from)
				if acted && res.acted == 0 {
					res.acted = time.Since(from)
				}
				return res.lease > 0 && res.acted > 0, msg, nil
			})
			if err := r.Start(ctx, leader); err != nil {
				t.Fatal(err)
			}
			results[name] = res
			t.Logf("%-15s killed leader %s: lease taken over after %s, acted after %s", name, r.Proc(leader),
				res.lease.Round(100*time.Millisecond), res.acted.Round(100*time.Millisecond))
		}
		stopLoad()
		n := <-loaded
		waitAllCompleted(ctx, t, c, ns, n+len(framework.Addons), 10*time.Minute)
		cr := createsIn(t, ns, since)
		for k, count := range cr.made {
			if count != 1 {
				t.Errorf("audit: %s was created %d times", k, count)
			}
		}
		t.Logf("load: %d JobSets, all Completed; audit: %d objects created, each once; %d creates answered 409, %d lost with a killed caller",
			n, len(cr.made), cr.conflicts, len(cr.lost))
		return ctx
	}).Feature()
	testenv.Test(t, f)
}

// waitLeader waits until one replica of r says it leads.
func waitLeader(ctx context.Context, t *testing.T, r *framework.AddonReplicas) int {
	t.Helper()
	var leader int
	framework.Eventually(ctx, t, time.Minute, r.Name+" has a leader", func(ctx context.Context) (bool, string, error) {
		var ok bool
		leader, ok = r.Leader(ctx)
		return ok, "no replica reports leader_election_master_status 1", nil
	})
	return leader
}

// leaseHolder is the holder of the add-on's leader election Lease.
func leaseHolder(ctx context.Context, t *testing.T, c client.Client, name string) string {
	var l coordinationv1.Lease
	if err := c.Get(ctx, client.ObjectKey{Namespace: framework.AddonNamespace, Name: name + ".jobset-addons.io"}, &l); err != nil {
		t.Logf("lease of %s: %v", name, err)
		return ""
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// actedOn says whether the add-on name has done its first piece of work for js: the shared PVC,
// the first Job's claim, the release of the second stage (from is moved to when the first stage
// completed, if that is later than the kill), the first stage's PodGroup.
func actedOn(ctx context.Context, c client.Client, name string, js *jobsetv1alpha2.JobSet, from *time.Time) (bool, string) {
	key := func(n string) client.ObjectKey { return client.ObjectKey{Namespace: js.Namespace, Name: n} }
	switch name {
	case "volumeclaims":
		n, _ := contract.SharedVolumeClaimName("data", js.Name)
		err := c.Get(ctx, key(n), &corev1.PersistentVolumeClaim{})
		return err == nil, fmt.Sprintf("PVC %s: %v", n, err)
	case "resourceclaims":
		n, _ := contract.ResourceClaimName(js.Name+"-worker-0", "dev", 0)
		err := c.Get(ctx, key(n), &resourcev1.ResourceClaim{})
		return err == nil, fmt.Sprintf("claim %s: %v", n, err)
	case "sequencer":
		var job batchv1.Job
		if err := c.Get(ctx, key(js.Name+"-init-0"), &job); err != nil {
			return false, err.Error()
		}
		if !apimeta.IsStatusConditionTrue(conditions(job.Status.Conditions), string(batchv1.JobComplete)) {
			return false, "the first stage runs"
		}
		if done := job.Status.CompletionTime.Time; done.After(*from) {
			*from = done
		}
		var got jobsetv1alpha2.JobSet
		if err := c.Get(ctx, key(js.Name), &got); err != nil {
			return false, err.Error()
		}
		r, errs := contract.ParseReleased(got.Annotations[contract.ReleasedAnnotationKey], nil)
		if len(errs) > 0 {
			return false, errs.ToAggregate().Error()
		}
		return r.Has("train"), "the second stage is not released"
	case "podgroups":
		n, _ := contract.StagePodGroupName(js.Name, 0)
		err := c.Get(ctx, key(n), &volcanov1beta1.PodGroup{})
		return err == nil, fmt.Sprintf("PodGroup %s: %v", n, err)
	}
	return false, "unknown add-on " + name
}

// conditions turns a Job's conditions into metav1.Conditions, for apimeta.
func conditions(cs []batchv1.JobCondition) []metav1.Condition {
	var out []metav1.Condition
	for _, c := range cs {
		out = append(out, metav1.Condition{Type: string(c.Type), Status: metav1.ConditionStatus(c.Status)})
	}
	return out
}
