package bench

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jobset-addons/jobset-addons/e2e/testbed"
)

// What BenchmarkScale measures beside the clock: the add-ons' memory (RSS, Go heap) and the
// API requests of the audit log, by add-on.

// rssSampler samples the resident memory of the add-ons' processes every 250 ms.
type rssSampler struct {
	tb   testbed.Config
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	peak map[string]int
}

func sampleRSS(tb testbed.Config) *rssSampler {
	s := &rssSampler{tb: tb, stop: make(chan struct{}), done: make(chan struct{}), peak: map[string]int{}}
	go func() {
		defer close(s.done)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			s.now()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// now is each add-on's RSS now, in KiB.
func (s *rssSampler) now() map[string]int {
	out := map[string]int{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range testbed.Addons {
		if kib, err := testbed.ProcessRSS(s.tb, a); err == nil {
			out[a] = kib
			s.peak[a] = max(s.peak[a], kib)
		}
	}
	return out
}

func (s *rssSampler) Stop() map[string]int {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.peak)
}

func mib(kib int) string { return fmt.Sprintf("%.1f MiB", float64(kib)/1024) }

// goHeap is, per add-on, its Go heap now, from its metrics: the bytes of live objects and of
// garbage not yet collected (go_memstats_heap_alloc_bytes) and the heap size at which its next
// collection starts (go_gc_heap_goal_bytes), which with GOGC=100 is twice what the last one
// found live. The rest of RSS is the runtime's, the binary's pages and heap memory freed but
// not yet returned to the system.
func goHeap(ctx context.Context, tb testbed.Config) map[string]string {
	out := map[string]string{}
	for _, a := range testbed.Addons {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", tb.AddonPorts(a).Metrics), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		text, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			continue
		}
		value := func(metric string) float64 {
			for _, line := range strings.Split(string(text), "\n") {
				if rest, ok := strings.CutPrefix(line, metric+" "); ok {
					v, _ := strconv.ParseFloat(rest, 64)
					return v
				}
			}
			return 0
		}
		out[a] = fmt.Sprintf("%.0f/%.0f", value("go_memstats_heap_alloc_bytes")/(1<<20), value("go_gc_heap_goal_bytes")/(1<<20))
	}
	return out
}

// addonOf is the add-on that made the request: its ServiceAccount's (jobset-addons-<name>),
// through the add-on's own clients (user agent jobset-addons-<name>, or
// <name>/<version> .../leader-election for controller-runtime's leader election, which sets its
// own); "" for anyone else (a benchmark's bare loop has the add-on's ServiceAccount but the
// bench's user agent).
func addonOf(a testbed.AuditRequest) string {
	for _, name := range testbed.Addons {
		if a.User == "system:serviceaccount:"+testbed.AddonNamespace+":jobset-addons-"+name &&
			(strings.HasPrefix(a.UserAgent, "jobset-addons-"+name) || strings.HasPrefix(a.UserAgent, name+"/")) {
			return name
		}
	}
	return ""
}

// requestKey is "verb resource[/subresource]", "(dry run)" after a dry run.
func requestKey(a testbed.AuditRequest) string {
	k := a.Verb + " " + a.Resource
	if a.Subresource != "" {
		k += "/" + a.Subresource
	}
	if a.DryRun {
		k += " (dry run)"
	}
	return k
}

func isEvent(a testbed.AuditRequest) bool {
	return a.Resource == "events.events.k8s.io" || a.Resource == "events"
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
