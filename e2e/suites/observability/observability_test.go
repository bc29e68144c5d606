package observability_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/testbed"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

const pvc = `{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}`

// waiting are JobSets that each wait on something an add-on owns, as long as they exist: a
// stage (its first ReplicatedJob runs 10 minutes), a start barrier (one of its pods fits no
// node, the other waits at the barrier), a gang (its pods fit no node), a claim (of a
// DeviceClass no device has); and held, which completes at once and whose PVC, deleted on
// completion, stays held by its finished pod.
func waiting(ns string) []*jobsetv1alpha2.JobSet {
	rj := func(name string, run string) *addontest.ReplicatedJobWrapper {
		return addontest.ReplicatedJob(name).Pods(1).PodAnnotation(framework.DelayAnnotationKey, run)
	}
	late := rj("late", "1s")
	late.PodSpec().NodeSelector = map[string]string{"observability-e2e": "no-such-node"}
	return []*jobsetv1alpha2.JobSet{
		addontest.JobSet(ns, "barrier").Annotation(contract.StartBarrierAnnotationKey, string(contract.StartBarrierJobSet)).
			ReplicatedJobs(rj("early", "1s"), late).Obj(),
		addontest.JobSet(ns, "stage").InOrder().ReplicatedJobs(rj("init", "10m"), rj("node", "1s")).Obj(),
		addontest.JobSet(ns, "gang").Annotation(contract.SchedulerAnnotationKey, "kubernetes").
			ReplicatedJobs(rj("w", "1s").Pods(2).Requests("1000", "1Gi")).Obj(),
		addontest.JobSet(ns, "claim").ReplicatedJobs(rj("w", "1s").JobAnnotation(contract.TemplatesAnnotationKey,
			`[{metadata: {name: gpu}, spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: nodevices.e2e.jobset-addons.io}}]}}}]`)).Obj(),
		addontest.JobSet(ns, "held").Annotation(contract.PoliciesAnnotationKey, `[{templates: [`+pvc+`], retentionPolicy: {whenComplete: Delete}}]`).
			ReplicatedJobs(rj("w", "1s").Mount("data")).Obj(),
	}
}

// TestObservability: Prometheus scrapes the four add-ons while JobSets that use all of them run
// (framework.AllAddonsJobSet), wait (waiting) and are refused; every dashboard query and every
// alert's expression returns series, the metrics count what happened, promtool passes the rules
// and each /metrics, and JobSetAddonDown fires once an add-on is stopped.
func TestObservability(t *testing.T) {
	f := framework.NamespacedFeature("observability", "scraped, queried, alerting", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)

		t.Run("promtool rules", func(t *testing.T) {
			rules, err := chartFile("files/alerts.yaml")
			if err != nil {
				t.Fatal(err)
			}
			tests, err := chartFile("tests/promtool/alerts_test.yaml")
			if err != nil {
				t.Fatal(err)
			}
			promtool(t, nil, "check", "rules", rules)
			promtool(t, nil, "test", "rules", tests)
		})

		// Every series of the add-ons sampled before anything happens: a rate() over a counter
		// needs a sample before its increase.
		for _, name := range framework.Addons {
			expectAtLeast(ctx, t, `count_over_time(up{job="jobset-addons-`+name+`-metrics"}[1m])`, 2)
		}
		// Every add-on's webhook series made before the workload too: controller-runtime makes a
		// webhook's latency series at its first call, after a restart (the chaos suite's) as well,
		// and a rate() over a series born with the workload's calls sees no increase.
		if err := c.Create(ctx, framework.AllAddonsJobSet(ns, "first-call"), client.DryRunAll); err != nil {
			t.Fatal(err)
		}
		expectAtLeast(ctx, t, `max(count_over_time(controller_runtime_webhook_latency_seconds_count{job=~"jobset-addons-.+-metrics"}[1m]))`, 1)
		all := framework.AllAddonsJobSet(ns, "all")
		framework.CreateAll(ctx, t, c, append(asObjects(waiting(ns)), all)...)
		refused := addontest.JobSet(ns, "refused").Annotation(contract.PoliciesAnnotationKey, `[{templates: [`+pvc+`], retentionPolicy: {whenComplete: Sometimes}}]`).
			ReplicatedJobs(addontest.ReplicatedJob("w").Pods(1)).Obj()
		if err := c.Create(ctx, refused); err == nil {
			t.Fatal("a JobSet with retentionPolicy whenComplete: Sometimes was admitted")
		}
		framework.WaitJobSet(ctx, t, c, all, jobsetv1alpha2.JobSetCompleted)

		// What the JobSets did, as the metrics count it.
		for _, e := range []struct {
			expr string
			min  float64
		}{
			{`sum(jobset_addons_leader{addon="volumeclaims"})`, 1},
			{`sum(jobset_addons_leader{addon="resourceclaims"})`, 1},
			{`sum(jobset_addons_leader{addon="sequencer"})`, 1},
			{`sum(jobset_addons_leader{addon="podgroups"})`, 1},
			{`sum(jobset_addons_objects_total{addon="volumeclaims", kind="PersistentVolumeClaim", action="created"})`, 3},
			{`sum(jobset_addons_objects_total{addon="volumeclaims", kind="PersistentVolumeClaim", action="deleted"})`, 1},
			{`sum(jobset_addons_objects_total{addon="resourceclaims", kind="ResourceClaim", action="created"})`, 2},
			{`sum(jobset_addons_objects_total{addon="sequencer", kind="Pod", action="updated"})`, 1},
			{`sum(jobset_addons_objects_total{addon="podgroups", action="created"})`, 2},
			{`sum(jobset_addons_webhook_refusals_total{addon="volumeclaims", webhook="jobset"})`, 1},
			{`sum(jobset_addons_webhook_dry_runs_total{verdict="accepted"})`, 1},
			{`sum(jobset_addons_jobsets_waiting{addon="sequencer", reason="stage"})`, 1},
			{`sum(jobset_addons_jobsets_waiting{addon="sequencer", reason="barrier"})`, 1},
			{`sum(jobset_addons_jobsets_waiting{addon="podgroups", reason="gang"})`, 1},
			{`sum(jobset_addons_jobsets_waiting{addon="resourceclaims", reason="claim"})`, 1},
			{`sum(jobset_addons_volumeclaims_held_claims)`, 1},
			{`sum(jobset_addons_sequencer_handoff_duration_seconds_count)`, 1},
		} {
			expectAtLeast(ctx, t, e.expr, e.min)
		}

		// Every dashboard query and every alert's expression returns series.
		queries, err := dashboardQueries()
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range queries {
			expectSeries(ctx, t, "panel "+strconv.Quote(q.Panel), q.Expr)
		}
		rf, err := readRules()
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range rf.Groups {
			for _, r := range g.Rules {
				s, ok := signal(r.Expr)
				if !ok {
					t.Errorf("alert %s: no threshold at the end of %q", r.Alert, r.Expr)
					continue
				}
				expectSeries(ctx, t, "alert "+r.Alert, s)
				got, err := query(ctx, r.Expr)
				if err != nil {
					t.Errorf("alert %s: %v", r.Alert, err)
				}
				t.Logf("alert %s: the full expression (chart's threshold) returns %d series now", r.Alert, len(got))
			}
		}

		t.Run("promtool check metrics", func(t *testing.T) {
			for _, name := range framework.Addons {
				body := framework.AddonMetrics(ctx, t, name)
				promtool(t, []byte(body), "check", "metrics")
				t.Logf("%s: promtool check metrics passes on %d lines", name, strings.Count(body, "\n"))
			}
		})

		// One add-on stopped: JobSetAddonDown fires for it, in Prometheus.
		const stopped = "resourceclaims"
		if err := testbed.StopAddon(ctx, tb, stopped); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		a := waitAlert(ctx, t, "JobSetAddonDown", map[string]string{"job": "jobset-addons-" + stopped + "-metrics"}, 2*time.Minute)
		t.Logf("JobSetAddonDown firing %s after %s was stopped: %v", time.Since(start).Round(time.Second), stopped, a.Labels)
		if err := testbed.StartAddon(ctx, tb, stopped, nil); err != nil {
			t.Fatal(err)
		}
		expectAtLeast(ctx, t, `sum(up{job="jobset-addons-`+stopped+`-metrics"})`, 1)
		return ctx
	})
	testenv.Test(t, f)
}

// TestAlertsFireOnWorkload: with their age thresholds cut to 5 s, JobSetWaitingTooLong fires for
// each reason (stage, barrier, gang, claim) and JobSetAddonPVCHeld for the held PVC, and both resolve
// once the JobSets are deleted.
func TestAlertsFireOnWorkload(t *testing.T) {
	f := framework.NamespacedFeature("alerts on a workload", "waiting and held fire, then resolve", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		// Those of other tests' JobSets gone first: the alerts below are this test's.
		expectNoAlerts(ctx, t, "JobSetWaitingTooLong", "JobSetAddonPVCHeld")
		jss := waiting(ns)
		framework.CreateAll(ctx, t, c, asObjects(jss)...)
		for _, reason := range []string{"stage", "barrier", "gang", "claim"} {
			a := waitAlert(ctx, t, "JobSetWaitingTooLong", map[string]string{"reason": reason}, 2*time.Minute)
			t.Logf("JobSetWaitingTooLong firing: %v, value %s", a.Labels, a.Value)
		}
		a := waitAlert(ctx, t, "JobSetAddonPVCHeld", nil, 2*time.Minute)
		t.Logf("JobSetAddonPVCHeld firing: %v, value %s", a.Labels, a.Value)

		for _, js := range jss {
			if err := c.Delete(ctx, js, client.PropagationPolicy(metav1.DeletePropagationForeground)); client.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			}
		}
		expectNoAlerts(ctx, t, "JobSetWaitingTooLong", "JobSetAddonPVCHeld")
		return ctx
	})
	testenv.Test(t, f)
}

// expectNoAlerts waits until none of the alerts names is pending or firing.
func expectNoAlerts(ctx context.Context, t *testing.T, names ...string) {
	t.Helper()
	start := time.Now()
	framework.Eventually(ctx, t, 3*time.Minute, "no "+strings.Join(names, ", "), func(ctx context.Context) (bool, string, error) {
		as, err := alerts(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		var left []string
		for _, a := range as {
			if slices.Contains(names, a.Labels["alertname"]) {
				left = append(left, a.State+" "+fmt.Sprint(a.Labels))
			}
		}
		return len(left) == 0, strings.Join(left, "; "), nil
	})
	t.Logf("no %s after %s", strings.Join(names, ", "), time.Since(start).Round(time.Second))
}

func asObjects(jss []*jobsetv1alpha2.JobSet) []client.Object {
	out := make([]client.Object, len(jss))
	for i, js := range jss {
		out[i] = js
	}
	return out
}

// promtool runs bin/prometheus-<version>/promtool with args and stdin, and fails t on an error.
func promtool(t *testing.T, stdin []byte, args ...string) {
	t.Helper()
	bin, err := testbed.PrometheusBin("promtool")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	msg := lastLine(string(out))
	if msg == "" {
		msg = "no problem reported, exit 0"
	}
	t.Logf("promtool %s: %s", strings.Join(args, " "), msg)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// expectAtLeast waits until expr, one series, is at least min.
func expectAtLeast(ctx context.Context, t *testing.T, expr string, min float64) {
	t.Helper()
	var got float64
	framework.Eventually(ctx, t, 2*time.Minute, expr+" >= "+strconv.FormatFloat(min, 'f', -1, 64), func(ctx context.Context) (bool, string, error) {
		res, err := query(ctx, expr)
		if err != nil || len(res) != 1 {
			return false, fmt.Sprintf("%d series, %v", len(res), err), nil
		}
		got, _ = strconv.ParseFloat(res[0].value(), 64)
		return got >= min, res[0].value(), nil
	})
	t.Logf("%s = %v", expr, got)
}

// expectSeries waits until expr returns series, at least one of them a number (not NaN: a
// rate of a histogram with no event in the window), and logs how many and one of them.
func expectSeries(ctx context.Context, t *testing.T, what, expr string) {
	t.Helper()
	var res []series
	var number *series
	framework.Eventually(ctx, t, 2*time.Minute, what+" returns a number: "+expr, func(ctx context.Context) (bool, string, error) {
		var err error
		res, err = query(ctx, expr)
		if err != nil {
			return false, err.Error(), nil
		}
		slices.SortFunc(res, func(a, b series) int { return strings.Compare(fmt.Sprint(a.Metric), fmt.Sprint(b.Metric)) })
		number = nil
		for i, s := range res {
			if v, err := strconv.ParseFloat(s.value(), 64); err == nil && !math.IsNaN(v) {
				number = &res[i]
				break
			}
		}
		return number != nil, fmt.Sprintf("%d series, none a number", len(res)), nil
	})
	nan := 0
	for _, s := range res {
		if s.value() == "NaN" {
			nan++
		}
	}
	t.Logf("%s: %d series (%d NaN: no event in the window); e.g. %v = %s", what, len(res), nan, number.Metric, number.value())
}

// waitAlert waits until the alert name with labels (a subset) is firing in Prometheus.
func waitAlert(ctx context.Context, t *testing.T, name string, labels map[string]string, timeout time.Duration) alert {
	t.Helper()
	var found alert
	framework.Eventually(ctx, t, timeout, name+" firing", func(ctx context.Context) (bool, string, error) {
		as, err := alerts(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		var seen []string
	next:
		for _, a := range as {
			if a.Labels["alertname"] != name {
				continue
			}
			seen = append(seen, a.State+" "+fmt.Sprint(a.Labels))
			for k, v := range labels {
				if a.Labels[k] != v {
					continue next
				}
			}
			if a.State == "firing" {
				found = a
				return true, "", nil
			}
		}
		return false, strings.Join(seen, "; "), nil
	})
	return found
}
