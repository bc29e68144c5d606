// Command testbed starts and stops the local control plane the e2e suites and the demo run on.
//
//	testbed up      start it (or finish starting it) and print the KUBECONFIG path
//	testbed down    stop every process of it and remove its state
//	testbed env     print `export KUBECONFIG=...` for a shell
//	testbed spawn NAME BIN [ARGS...]
//	                start BIN in the background as part of the testbed (down stops it);
//	                it logs to .testbed/procs/NAME.log
//	testbed wait-http URL   wait up to 60 s for URL to answer 200
//	testbed ps      list the testbed's processes with their resident memory
//	testbed addon NAME [ARGS...]
//	                run the add-on controller bin/NAME on the testbed with its webhooks
//	testbed gang    run Volcano's scheduler and scheduler-plugins' coscheduling scheduler
//	                beside the default one, with their CRDs (before podgroups starts)
//	testbed kueue [--wait-for-pods-ready=DURATION] [FRAMEWORK...]
//	                run Kueue (make kueue-bins) beside JobSet with its webhooks on 127.0.0.1, its
//	                CRDs from its module, and the testbed's topology labels on the nodes; its
//	                integrations are FRAMEWORK... (default jobset.x-k8s.io/jobset); with
//	                --wait-for-pods-ready, Kueue's waitForPodsReady timeout is DURATION (its
//	                requeue backoff from 1 s) rather than Kueue's default (v0.19: 30m)
//	testbed kueue-down
//	                stop Kueue and remove its webhook configurations
//	testbed trainer run Kubeflow Trainer (testbed.TrainerVersion, make trainer-bins) beside
//	                JobSet, with its CRDs and its webhooks on 127.0.0.1
//	testbed kwok-stages
//	                print the testbed's kwok stages (pod run time, failures) as YAML
//	testbed fit-cluster N
//	                give the cluster of $KUBECONFIG N kwok nodes and the default StorageClass,
//	                as the testbed has
//	testbed kind-up     make (or reuse) the kind cluster of real containers with everything
//	                    installed, as make e2e-kind does, and print its KUBECONFIG path
//	                    (DEMO_CLUSTER=kind make demo; kindbed.DefaultConfig's environment)
//	testbed kind-down   delete it and check that nothing of it is left
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jobset-addons/jobset-addons/e2e/kindbed"
	"github.com/jobset-addons/jobset-addons/e2e/testbed"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	cfg, err := testbed.DefaultConfig()
	if err != nil {
		fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s testbed: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
	switch os.Args[1] {
	case "up":
		if err := testbed.Up(ctx, cfg, log); err != nil {
			// Leave nothing half-started behind.
			_ = testbed.Down(context.Background(), cfg, log)
			fail(err)
		}
		fmt.Printf("KUBECONFIG=%s\n", cfg.Kubeconfig())
	case "down":
		if err := testbed.Down(ctx, cfg, log); err != nil {
			fail(err)
		}
	case "env":
		fmt.Printf("export KUBECONFIG=%s\n", cfg.Kubeconfig())
	case "kind-up", "kind-down":
		kc, err := kindbed.DefaultConfig()
		if err != nil {
			fail(err)
		}
		if os.Args[1] == "kind-down" {
			err = kindbed.Down(ctx, kc, log)
		} else if _, err = kindbed.Up(ctx, kc, log); err == nil {
			fmt.Printf("KUBECONFIG=%s\n", kc.Kubeconfig())
		}
		if err != nil {
			fail(err)
		}
	case "spawn":
		if len(os.Args) < 4 {
			usage()
		}
		logPath, err := testbed.StartProcess(cfg, os.Args[2], os.Args[3], os.Args[4:]...)
		if err != nil {
			fail(err)
		}
		log("Started %s; it logs to %s", os.Args[2], logPath)
	case "addon":
		if len(os.Args) < 3 {
			usage()
		}
		if err := testbed.StartAddon(ctx, cfg, os.Args[2], nil, os.Args[3:]...); err != nil {
			fail(err)
		}
		p := cfg.AddonPorts(os.Args[2])
		log("%s is ready: webhooks on :%d, health on :%d, metrics on :%d, log in %s", os.Args[2], p.Webhook, p.Health, p.Metrics,
			filepath.Join(cfg.WorkDir, "procs", os.Args[2]+".log"))
	case "gang":
		if err := testbed.StartGangSchedulers(ctx, cfg, log); err != nil {
			fail(err)
		}
	case "kueue":
		o, err := kueueOptions(os.Args[2:])
		if err != nil {
			fail(err)
		}
		if err := testbed.StartKueue(ctx, cfg, o, log); err != nil {
			fail(err)
		}
		log("Kueue is ready; it logs to %s", cfg.ProcessLog("kueue"))
	case "kueue-down":
		if err := testbed.StopKueue(ctx, cfg); err != nil {
			fail(err)
		}
	case "trainer":
		if err := testbed.StartTrainer(ctx, cfg, log); err != nil {
			fail(err)
		}
	case "kwok-stages":
		out, err := testbed.KwokStages(cfg.PodDuration)
		if err != nil {
			fail(err)
		}
		os.Stdout.Write(out)
	case "fit-cluster":
		n, err := strconv.Atoi(arg(2))
		if err != nil {
			usage()
		}
		if err := testbed.FitCluster(ctx, os.Getenv("KUBECONFIG"), n); err != nil {
			fail(err)
		}
	case "ps":
		total := 0
		fmt.Printf("%-8s %-26s %10s\n", "PID", "PROCESS", "RSS (MiB)")
		for _, p := range testbed.Processes(cfg) {
			total += p.RSSKiB
			fmt.Printf("%-8d %-26s %10.1f\n", p.PID, p.Name, float64(p.RSSKiB)/1024)
		}
		fmt.Printf("%-8s %-26s %10.1f\n", "", "total", float64(total)/1024)
	case "wait-http":
		if len(os.Args) != 3 {
			usage()
		}
		if err := testbed.WaitHTTP(ctx, os.Args[2], time.Minute); err != nil {
			fail(err)
		}
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: testbed up|down|env|ps|gang|kueue [--wait-for-pods-ready=DURATION] [FRAMEWORK...]|kueue-down|trainer|kwok-stages|fit-cluster N|addon NAME [ARGS...]|spawn NAME BIN [ARGS...]|wait-http URL")
	os.Exit(2)
}

func arg(i int) string {
	if len(os.Args) <= i {
		usage()
	}
	return os.Args[i]
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "testbed:", err)
	os.Exit(1)
}

// kueueOptions reads `testbed kueue`'s arguments: --wait-for-pods-ready=DURATION, then the
// frameworks.
func kueueOptions(args []string) (testbed.KueueOptions, error) {
	var o testbed.KueueOptions
	for _, a := range args {
		v, ok := strings.CutPrefix(a, "--wait-for-pods-ready=")
		if !ok {
			o.Frameworks = append(o.Frameworks, a)
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return o, fmt.Errorf("--wait-for-pods-ready=%s: want a positive duration, as 20s", v)
		}
		o.WaitForPodsReady = &testbed.KueueWaitForPodsReady{Timeout: d, BackoffBaseSeconds: 1}
	}
	return o, nil
}
