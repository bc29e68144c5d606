package testbed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jobset-addons/jobset-addons/e2e/repo"
)

// KAI Scheduler (NVIDIA) runs beside the testbed's default scheduler as a further gang
// scheduler: its scheduler, which writes a BindRequest for each pod it places, and its binder,
// which binds them; both from the wrapper module tools/kai (make kai-bins links them as
// bin/testbed/kai-scheduler and kai-binder), its CRDs applied from its module source
// (bin/testbed/kai-src names that directory). KAI's pod grouper, which makes a PodGroup for
// every pod without one of a kind it knows, runs only when asked for (KAIOptions.PodGrouper).

// KAISchedulerName is the schedulerName KAI's pods name (KAI's default).
const KAISchedulerName = repo.KAISchedulerName

// The testbed's KAI queues: KAI schedules only PodGroups of a queue that has a parent.
const (
	KAIParentQueue  = "default-parent-queue"
	KAIDefaultQueue = "default-queue"
)

// kaiCRDs are the CRDs KAI's scheduler and binder watch (deployments/kai-scheduler/crds of its
// module holds them and KAI's operator's two more, applied too).
var kaiCRDs = []string{
	"podgroups.scheduling.run.ai", "queues.scheduling.run.ai", "bindrequests.scheduling.run.ai", "topologies.kai.scheduler",
}

// KAIOptions say how KAI runs.
type KAIOptions struct {
	// PodGrouper runs KAI's pod grouper too, with PodGrouperArgs (for example
	// --pod-label-selector).
	PodGrouper     bool
	PodGrouperArgs []string
}

// kaiQueues are the testbed's queues: a parent and a leaf under it, neither with a quota.
const kaiQueues = `apiVersion: scheduling.run.ai/v2
kind: Queue
metadata:
  name: ` + KAIParentQueue + `
spec:
  resources:
    cpu: {quota: -1, limit: -1, overQuotaWeight: 1}
    gpu: {quota: -1, limit: -1, overQuotaWeight: 1}
    memory: {quota: -1, limit: -1, overQuotaWeight: 1}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata:
  name: ` + KAIDefaultQueue + `
spec:
  parentQueue: ` + KAIParentQueue + `
  resources:
    cpu: {quota: -1, limit: -1, overQuotaWeight: 1}
    gpu: {quota: -1, limit: -1, overQuotaWeight: 1}
    memory: {quota: -1, limit: -1, overQuotaWeight: 1}
`

// KAISrc is KAI's module source, from the file kai-src.
func (c Config) KAISrc() (string, error) {
	b, err := os.ReadFile(c.Bin("kai-src"))
	if err != nil {
		return "", fmt.Errorf("%s is missing: run `make kai-bins` first", c.Bin("kai-src"))
	}
	return strings.TrimSpace(string(b)), nil
}

// StartKAI installs KAI's CRDs and the testbed's queues, and runs KAI's binder and scheduler
// (and its pod grouper, if asked), unless they run already. Down stops them.
func StartKAI(ctx context.Context, c Config, o KAIOptions, log func(string, ...any)) error {
	for _, b := range []string{"kai-scheduler", "kai-binder"} {
		if _, err := os.Stat(c.Bin(b)); err != nil {
			return fmt.Errorf("%s is missing: run `make kai-bins` first", c.Bin(b))
		}
	}
	src, err := c.KAISrc()
	if err != nil {
		return err
	}
	rc, err := c.RESTConfig()
	if err != nil {
		return err
	}
	if err := run(ctx, c, "kubectl", "--kubeconfig", c.Kubeconfig(), "apply", "--server-side", "--force-conflicts",
		"-f", filepath.Join(src, "deployments", "kai-scheduler", "crds")); err != nil {
		return err
	}
	for _, n := range kaiCRDs {
		if err := waitCRDEstablished(ctx, rc, n); err != nil {
			return err
		}
	}
	dir := filepath.Join(c.WorkDir, "kai")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	queues := filepath.Join(dir, "queues.yaml")
	if err := os.WriteFile(queues, []byte(kaiQueues), 0o644); err != nil {
		return err
	}
	if err := run(ctx, c, "kubectl", "--kubeconfig", c.Kubeconfig(), "apply", "--server-side", "--force-conflicts", "-f", queues); err != nil {
		return err
	}
	env, err := exec.LookPath("env")
	if err != nil {
		return err
	}
	kubeconfig := "KUBECONFIG=" + c.Kubeconfig()
	p := c.Ports()
	// KAI's binder and pod grouper register no health checks (their /readyz answers 404): their
	// metrics answer once they run.
	binderHealth := fmt.Sprintf("http://127.0.0.1:%d/metrics", p.KAIBinderMetrics)
	if !httpOK(ctx, binderHealth) {
		logPath, err := StartProcess(c, "kai-binder", env, kubeconfig, c.Bin("kai-binder"),
			"--scheduler-name", KAISchedulerName, "--qps=200", "--burst=400",
			fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", p.KAIBinderMetrics),
			fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", p.KAIBinderHealth))
		if err != nil {
			return err
		}
		if err := WaitHTTP(ctx, binderHealth, time.Minute); err != nil {
			return fmt.Errorf("KAI's binder: %w; see %s", err, logPath)
		}
		log("KAI binder running")
	}
	metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", p.KAIMetrics)
	if !httpOK(ctx, metrics) {
		logPath, err := StartProcess(c, "kai-scheduler", env, kubeconfig, c.Bin("kai-scheduler"),
			"--scheduler-name", KAISchedulerName, "--schedule-period=200ms", "--qps=200", "--burst=400",
			"--leader-elect=false",
			fmt.Sprintf("--listen-address=127.0.0.1:%d", p.KAIMetrics),
			fmt.Sprintf("--plugin-server-port=%d", p.KAIPluginServer))
		if err != nil {
			return err
		}
		if err := WaitHTTP(ctx, metrics, time.Minute); err != nil {
			return fmt.Errorf("KAI's scheduler: %w; see %s", err, logPath)
		}
		log("KAI scheduler running (schedulerName %s)", KAISchedulerName)
	}
	if o.PodGrouper {
		if err := startKAIPodGrouper(ctx, c, env, kubeconfig, o.PodGrouperArgs, log); err != nil {
			return err
		}
	}
	return nil
}

// startKAIPodGrouper runs KAI's pod grouper (bin/testbed/kai-podgrouper), leader election off.
func startKAIPodGrouper(ctx context.Context, c Config, env, kubeconfig string, args []string, log func(string, ...any)) error {
	if _, err := os.Stat(c.Bin("kai-podgrouper")); err != nil {
		return fmt.Errorf("%s is missing: run `make kai-bins` first", c.Bin("kai-podgrouper"))
	}
	p := c.Ports()
	health := fmt.Sprintf("http://127.0.0.1:%d/metrics", p.KAIGrouperMetrics)
	if httpOK(ctx, health) {
		return nil
	}
	all := append([]string{kubeconfig, c.Bin("kai-podgrouper"), "--scheduler-name", KAISchedulerName,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", p.KAIGrouperMetrics),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", p.KAIGrouperHealth)}, args...)
	logPath, err := StartProcess(c, "kai-podgrouper", env, all...)
	if err != nil {
		return err
	}
	if err := WaitHTTP(ctx, health, time.Minute); err != nil {
		return fmt.Errorf("KAI's pod grouper: %w; see %s", err, logPath)
	}
	log("KAI pod grouper running (%s)", strings.Join(args, " "))
	return nil
}

// StopKAIPodGrouper stops KAI's pod grouper, if it runs.
func StopKAIPodGrouper(c Config) error { return stopProcess(c, "kai-podgrouper") }
