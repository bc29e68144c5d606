package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobset-addons/jobset-addons/e2e/testbed"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// The scale benchmark (make bench ADDON=scale): the four add-ons together, at the scale users run
// them. Every size is a parameter, so that it runs small first:
//
//	SCALE_JOBSETS  JobSets of the mixed load (default 1000), created at SCALE_RATE a second (20)
//	SCALE_GANG     the gang backend of the mixed load: coscheduling (default) or kubernetes. With
//	               kubernetes, kube-scheduler v1.37.1 leaves some gangs whose pods share a claim
//	               Pending for good ('error in "DynamicResources" PodGroupPostFilter plugins: not
//	               found', after 'claim ... got allocated elsewhere in the meantime'): 7 of 20
//	               JobSets never finished. scheduler-plugins' scheduler (Kubernetes 1.33) has no
//	               DRA: it binds the pods and leaves their claims unallocated.
//	SCALE_BIG_JOBS, SCALE_BIG_PODS  the one big JobSet: Jobs x pods (default 100 x 100)
//	SCALE_BENCH    the scenarios to run: mixed, big (default both); release (named only): the
//	               big JobSet's release alone, against every bare loop (release_test.go)
//	SCALE_RESTART  0 skips the restart of each add-on with the mixed load's JobSets there
//	SCALE_LEASE    default runs the add-ons with the chart's Lease timings (see scaleAddonArgs)
//
// Nothing here asserts a time: the tables print what was measured, with the scale used.

// scaleStorageClass is the StorageClass of the big JobSet's PVCs: host paths, bound for the
// first pod scheduled with them.
const scaleStorageClass = "scale-wffc"

// scaleDeviceClass is the DRA DeviceClass of the benchmark's claims.
const scaleDeviceClass = "scale.bench.jobset-addons.io"

func envIntOr(key string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(key)); err == nil && n > 0 {
		return n
	}
	return def
}

// BenchmarkScale runs all four add-ons on the testbed and prints the tables of the scenarios.
func BenchmarkScale(b *testing.B) {
	if os.Getenv("BENCH_SCALE") == "" {
		b.Skip("make bench ADDON=scale runs it (BENCH_SCALE=1): it takes long, and a testbed of many nodes")
	}
	ctx := context.Background()
	c, cs, tb := clients(b)
	gang := contract.Scheduler(envOr("SCALE_GANG", string(contract.SchedulerCoscheduling)))
	if gang == contract.SchedulerCoscheduling {
		if err := testbed.StartGangSchedulers(ctx, tb, func(f string, a ...any) { fmt.Fprintf(os.Stderr, "testbed: "+f+"\n", a...) }); err != nil {
			b.Fatal(err)
		}
	}
	// Claims are allocated while their pods run: the testbed's nodes run at most 110 pods each.
	if err := testbed.PublishDevices(ctx, tb, scaleDeviceClass, max(4, (tb.Nodes*110+testbed.DevicesPerSlice-1)/testbed.DevicesPerSlice)); err != nil {
		b.Fatal(err)
	}
	for _, name := range testbed.Addons {
		if err := testbed.StartAddon(ctx, tb, name, nil, scaleAddonArgs()...); err != nil {
			b.Fatal(err)
		}
		defer func() { _ = testbed.StopAddon(ctx, tb, name) }()
	}
	makeInstantClass(ctx, b, cs)
	if err := waitAllWebhooks(ctx, c, gang); err != nil {
		b.Fatal(err)
	}
	// An add-on whose process exits (its leader election lost, when the apiserver answers a
	// Lease renewal late) is started again, as its Deployment's pod would be, and told.
	dog := watchAddons(ctx, b, tb)
	defer dog.Stop()
	only := os.Getenv("SCALE_BENCH")
	run := func(name string) bool { return only == "" || slices.Contains(strings.Split(only, ","), name) }
	if run("mixed") {
		mixedLoad(ctx, b, c, cs, tb, dog, gang, envIntOr("SCALE_JOBSETS", 1000), float64(envIntOr("SCALE_RATE", 20)))
	}
	if run("big") {
		bigJobSet(ctx, b, c, cs, tb, envIntOr("SCALE_BIG_JOBS", 100), envIntOr("SCALE_BIG_PODS", 100))
	}
	// Named only: the big JobSet's release already runs against the bare loops.
	if slices.Contains(strings.Split(only, ","), "release") {
		wctx, cancel := context.WithCancel(ctx)
		releaseScenario(ctx, b, c, tb, watchTimeline(wctx, b, cs), envIntOr("SCALE_BIG_JOBS", 100), envIntOr("SCALE_BIG_PODS", 100))
		cancel()
	}
	restarts := dog.restarts()
	fmt.Printf("\nadd-on processes that exited during the run and were started again: %d\n", len(restarts))
	for _, r := range restarts {
		fmt.Println("  " + r)
	}
}

// scaleAddonArgs are the add-ons' arguments: $BENCH_ADDON_ARGS, and unless SCALE_LEASE=default
// a Lease of 60 s renewed every 5 s within 40 s. With the chart's 8 s / 6 s / 1 s, on this
// 2-core machine shared with other sessions' builds and testbeds (load 12 to 17), the apiserver
// answered Lease renewals after the 6 s deadline: every add-on lost its lease, and exited, 6 to
// 10 times in 15 minutes of the mixed load at 250 JobSets, which makes its memory, CPU and
// requests those of restarts.
func scaleAddonArgs() []string {
	args := addonArgs()
	if os.Getenv("SCALE_LEASE") != "default" {
		args = append(args, "--leader-election-lease-duration=60s", "--leader-election-renew-deadline=40s", "--leader-election-retry-period=5s")
	}
	return args
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// addonWatchdog starts again, every 2 s, an add-on whose process exited, and keeps why.
type addonWatchdog struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	held bool
	log  []string
}

func watchAddons(ctx context.Context, b *testing.B, tb testbed.Config) *addonWatchdog {
	d := &addonWatchdog{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(d.done)
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-d.stop:
				return
			case <-t.C:
			}
			d.mu.Lock()
			for _, name := range testbed.Addons {
				if _, err := testbed.ProcessRSS(tb, name); err == nil || d.held {
					continue
				}
				why := lastLine(tb.ProcessLog(name))
				at := time.Now()
				if err := testbed.StartAddon(ctx, tb, name, nil, scaleAddonArgs()...); err != nil {
					why += "; and it did not start again: " + err.Error()
				}
				d.log = append(d.log, fmt.Sprintf("%s at %s (%s)", name, at.Format("15:04:05"), why))
			}
			d.mu.Unlock()
		}
	}()
	return d
}

// pause holds the watchdog while the bench stops and starts the add-ons itself.
func (d *addonWatchdog) pause(held bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.held = held
}

func (d *addonWatchdog) restarts() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.log)
}

func (d *addonWatchdog) Stop() {
	close(d.stop)
	<-d.done
}

// lastLine is the last line of the file that does not start with white space (a stack).
func lastLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := lines[i]; l != "" && l[0] != ' ' && l[0] != '\t' {
			return l
		}
	}
	return ""
}
