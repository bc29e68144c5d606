package bench

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/jobset-addons/jobset-addons/e2e/testbed"
)

// The restart scenario of BenchmarkScale: the add-ons restarted under load, and how long they
// take to catch up.

// restartCatchUp restarts each add-on, one at a time, with the n JobSets of ns (finished) and
// their objects there, and tells how long it takes to catch up (from the process's start until
// its workqueue is empty after at least n reconciles), and what it asks the apiserver meanwhile:
// nothing may be made twice.
func restartCatchUp(ctx context.Context, b *testing.B, tb testbed.Config, n int, since time.Time) (from, to time.Time) {
	type window struct{ from, to time.Time }
	windows := map[string]window{}
	var rows []row
	for _, name := range testbed.Addons {
		if err := testbed.StopAddon(ctx, tb, name); err != nil {
			b.Fatal(err)
		}
		p, err := testbed.PrepareAddon(ctx, tb, name, scaleAddonArgs()...)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := p.Start(ctx, nil); err != nil {
			b.Fatal(err)
		}
		url := fmt.Sprintf("http://127.0.0.1:%d/metrics", tb.AddonPorts(name).Metrics)
		var reconciles float64
		var caught time.Time
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return false, nil
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return false, nil
			}
			text := string(body)
			reconciles = testbed.MetricSum(text, "controller_runtime_reconcile_total", `controller="`+name+`"`)
			depth := testbed.MetricSum(text, "workqueue_depth", `name="`+name+`"`)
			unfinished := testbed.MetricSum(text, "workqueue_unfinished_work_seconds", `name="`+name+`"`)
			if reconciles >= float64(n) && depth == 0 && unfinished == 0 {
				caught = time.Now()
				return true, nil
			}
			return false, nil
		}); err != nil {
			rows = append(rows, row{what: name + ": DID NOT CATCH UP within 5m", ours: fmt.Sprintf("%.0f rec", reconciles), baseline: lastLine(tb.ProcessLog(name)), target: "-"})
			windows[name] = window{start, time.Now()}
			continue
		}
		acting, err := workersStarted(tb, name)
		if err != nil {
			b.Fatal(err)
		}
		windows[name] = window{start, caught}
		rows = append(rows, row{what: name + ": process start to workers started; to caught up", ours: acting.Sub(start).Round(time.Millisecond).String(),
			baseline: caught.Sub(start).Round(time.Millisecond).String(), ratio: fmt.Sprintf("%.0f rec", reconciles), target: "-"})
	}
	time.Sleep(2 * time.Second) // the audit log's last lines
	// Every object made since the load began, by the time it was made: a create in a restart
	// window of one made before is made twice; one never made before is the JobSets' progress
	// (with JobSets still running, their next stages' objects).
	audit, err := testbed.AuditRequests(tb, since)
	if err != nil {
		b.Fatal(err)
	}
	madeAt := map[string]time.Time{}
	object := func(a testbed.AuditRequest) string { return a.Resource + " " + a.Namespace + "/" + a.Name }
	made := func(a testbed.AuditRequest) bool {
		return a.Verb == "create" && a.Code == 201 && !a.DryRun && !isEvent(a) && a.Resource != "leases.coordination.k8s.io"
	}
	for _, a := range audit {
		if _, ok := madeAt[object(a)]; !ok && made(a) {
			madeAt[object(a)] = a.At
		}
	}
	for _, name := range testbed.Addons {
		w := windows[name]
		counts := map[string]int{}
		again, progress := 0, 0
		for _, a := range audit {
			if addonOf(a) != name || a.At.Before(w.from) || a.At.After(w.to) {
				continue
			}
			counts[requestKey(a)]++
			if made(a) {
				if madeAt[object(a)].Before(a.At) {
					again++
				} else {
					progress++
				}
			}
		}
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(counts)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
		}
		rows = append(rows, row{what: "  " + name + ": objects made again (201 of a name made before); made new", ours: strconv.Itoa(again), baseline: strconv.Itoa(progress), target: "0; -"})
		rows = append(rows, row{what: "    requests: " + strings.Join(parts, ", "), target: "-"})
	}
	printTable(fmt.Sprintf("restart, one add-on at a time, with %d finished JobSets and their objects there (rec: reconciles)", n), rows)
	return windows[testbed.Addons[0]].from, windows[testbed.Addons[len(testbed.Addons)-1]].to
}
