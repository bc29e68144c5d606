package chaos_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
)

// TestWebhookOutage makes every add-on's webhooks unreachable (each Front refuses connections)
// for CHAOS_OUTAGE_SECONDS while JobSets are created, one plain and one of the mix each second,
// before, during and after. JobSets that use no add-on must not notice: no failure, the same
// completion time. JobSets that use one are refused with the webhook's name while it is
// unreachable and, created again after, complete with every object and mutation; JobSets admitted
// just before the outage have their Jobs' and pods' creation retried by their controllers.
func TestWebhookOutage(t *testing.T) {
	f := features.New("webhook outage").Assess("only add-on JobSets wait, and none is admitted unmutated", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		if err := waitProbe(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		c := framework.Client(t, cfg)
		ns := newNamespace(ctx, t, c, "outage")
		since := time.Now()
		outage := time.Duration(outageSeconds) * time.Second

		var (
			mu          sync.Mutex
			wg          sync.WaitGroup
			plainPhase  = map[string]string{} // plain JobSet: before, during or after
			plainFailed []string
			mixN        int
			refused     = map[int]string{} // mix JobSet: the first refusal's message
		)
		phase := "before"
		tick := func() {
			p := plainJobSet(ns, len(plainPhase))
			if err := c.Create(ctx, p); err != nil {
				plainFailed = append(plainFailed, fmt.Sprintf("%s (%s): %v", p.Name, phase, err))
			}
			plainPhase[p.Name] = phase
			i := mixN
			mixN++
			wg.Go(func() {
				js := mixJobSet(ns, i)
				failed, first, err := createRetrying(ctx, c, js, outage+time.Minute)
				if err != nil {
					t.Errorf("creating %s: %v", js.Name, err)
				}
				if failed > 0 {
					mu.Lock()
					refused[i] = first
					mu.Unlock()
				}
			})
		}
		for range 8 {
			tick()
			time.Sleep(time.Second)
		}
		for range 4 { // admitted just before: their Jobs and pods are made during the outage
			tick()
		}
		for _, name := range framework.Addons {
			replicas[name].Front.Pause()
		}
		phase = "during"
		outageStart := time.Now()
		for time.Since(outageStart) < outage {
			tick()
			time.Sleep(time.Second)
		}
		for _, name := range framework.Addons {
			if err := replicas[name].Front.Resume(); err != nil {
				t.Fatal(err)
			}
		}
		phase = "after"
		t.Logf("webhooks unreachable for %s", time.Since(outageStart).Round(100*time.Millisecond))
		for range 8 {
			tick()
			time.Sleep(time.Second)
		}
		wg.Wait()
		waitAllCompleted(ctx, t, c, ns, mixN+len(plainPhase), 10*time.Minute)

		// JobSets of no add-on: never refused, and as fast during the outage as before it.
		if len(plainFailed) > 0 {
			t.Errorf("JobSets of no add-on failed: %v", plainFailed)
		}
		took := map[string][]time.Duration{}
		for name, ph := range plainPhase {
			var js jobsetv1alpha2.JobSet
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &js); err != nil {
				t.Fatal(err)
			}
			done := apimeta.FindStatusCondition(js.Status.Conditions, string(jobsetv1alpha2.JobSetCompleted))
			took[ph] = append(took[ph], done.LastTransitionTime.Sub(js.CreationTimestamp.Time))
		}
		for _, ph := range []string{"before", "during", "after"} {
			t.Logf("JobSets of no add-on created %-6s the outage: %2d, completed in median %s (max %s)", ph, len(took[ph]), median(took[ph]), slices.Max(took[ph]))
		}
		if median(took["during"]) > median(took["before"])+5*time.Second {
			t.Errorf("JobSets of no add-on were slowed by the outage: median %s during, %s before", median(took["during"]), median(took["before"]))
		}

		// JobSets of the add-ons: those created during the outage were refused, naming the webhook.
		var example string
		for i, msg := range refused {
			if !strings.Contains(msg, "failed calling webhook") || !strings.Contains(msg, ".jobset-addons.io") {
				t.Errorf("%s was refused with %q, which names no add-on webhook", jobSetName(i), msg)
			}
			example = msg
		}
		if len(refused) == 0 {
			t.Error("no JobSet of an add-on was refused during the outage")
		}
		t.Logf("JobSets of the add-ons: %d, of which %d refused during the outage and created after it, e.g. %q", mixN, len(refused), example)

		// Every one complete with its objects and mutations, each created once.
		w := expectations(mixN, nil)
		got := settle(ctx, t, c, ns, w)
		pods := checkPods(ctx, t, c, ns, mixN)
		creates := checkAudit(t, ns, since, w)
		t.Logf("after the outage: %d PVCs kept, %d deleted; %d claims kept, %d deleted; %d pods each with its volumes, claims and gang; %d creates, each object once",
			got.pvcsKept, got.pvcsGone, got.claimsKept, got.claimsGone, pods, creates)
		return ctx
	}).Feature()
	testenv.Test(t, f)
}

// plainJobSet is a JobSet that uses no add-on: 2 pods of 2 s.
func plainJobSet(ns string, i int) *jobsetv1alpha2.JobSet {
	return addontest.JobSet(ns, fmt.Sprintf("plain-%03d", i)).ReplicatedJobs(replicated("w", 1, 2)).Obj()
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2].Round(100 * time.Millisecond)
}
