package testbed

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"time"
)

// VolcanoControllersProcess is the name under which StartVolcanoControllers runs Volcano's
// controller-manager (its log is WorkDir/procs/<name>.log); /proc/<pid>/comm shows it cut to
// 15 characters, VolcanoControllersComm.
const (
	VolcanoControllersProcess = "vc-controller-manager"
	VolcanoControllersComm    = "vc-controller-m"
)

// StartVolcanoControllers runs Volcano's controller-manager, the binary bin, with its job
// controller alone: it makes a PodGroup (and, once the PodGroup is Inqueue, the pods) for each
// Volcano Job (vcjob). Volcano's CRDs must be installed (InstallGangCRDs). Its webhooks
// (vc-webhook-manager) do not run: a vcjob made with its defaults filled in (queue, scheduler,
// minAvailable, task names, maxRetry) needs none of them. The client limits are the ones the
// testbed gives its other controllers (QPS 200, burst 400). It returns once the job
// controller's workers run (its caches synced). StopVolcanoControllers stops it.
func StartVolcanoControllers(ctx context.Context, c Config, bin string) error {
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("Volcano's controller-manager %s is missing: make bench ADDON=peers builds it", bin)
	}
	health := fmt.Sprintf("http://127.0.0.1:%d/healthz", c.Ports().VolcanoControllersHealth)
	logPath := c.ProcessLog(VolcanoControllersProcess)
	logged := LogSize(c, VolcanoControllersProcess)
	_, err := StartProcess(c, VolcanoControllersProcess, bin,
		"--kubeconfig", c.Kubeconfig(), "--leader-elect=false", "--controllers=+job-controller",
		"--scheduler-name", VolcanoSchedulerName, "--kube-api-qps=200", "--kube-api-burst=400",
		"--enable-healthz", fmt.Sprintf("--healthz-address=127.0.0.1:%d", c.Ports().VolcanoControllersHealth))
	if err != nil {
		return err
	}
	if err := WaitHTTP(ctx, health, time.Minute); err != nil {
		return fmt.Errorf("Volcano's controller-manager: %w; see %s", err, logPath)
	}
	// Its health check answers as the process starts; its job controller's workers start once
	// its caches have synced, and say so.
	err = WaitLogged(ctx, c, VolcanoControllersProcess, logged, regexp.MustCompile(`JobController is running`), time.Minute)
	if err != nil {
		return fmt.Errorf("Volcano's job controller did not start: %w; see %s", err, logPath)
	}
	return nil
}

// StopVolcanoControllers stops Volcano's controller-manager, if it runs.
func StopVolcanoControllers(c Config) error { return stopProcess(c, VolcanoControllersProcess) }
