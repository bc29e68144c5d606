package testbed

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/jobset-addons/jobset-addons/e2e/repo"
)

// Gang schedulers, each run beside the testbed's default scheduler as a second scheduler: pods
// choose one by schedulerName.
const (
	VolcanoSchedulerName      = repo.VolcanoSchedulerName
	CoschedulingSchedulerName = repo.CoschedulingSchedulerName
)

// gangCRDs are the CustomResourceDefinitions the two schedulers need, by the directory of
// bin/testbed that holds their manifests (every manifest there is applied; these are waited
// for). Volcano's cache never syncs without every one of the CRDs it watches, numatopologies
// and hypernodes (v1.14.1 watches them whatever its configuration) included.
var gangCRDs = map[string][]string{
	"volcano-crds": {
		"podgroups.scheduling.volcano.sh", "queues.scheduling.volcano.sh", "numatopologies.nodeinfo.volcano.sh",
		"hypernodes.topology.volcano.sh", "jobs.batch.volcano.sh", "commands.bus.volcano.sh",
	},
	"scheduler-plugins-crds": {"podgroups.scheduling.x-k8s.io", "elasticquotas.scheduling.x-k8s.io"},
}

// volcanoConf is Volcano's default scheduler configuration (pkg/scheduler/util.go of v1.14.1,
// unchanged since v1.10.0): enqueue gates a PodGroup on its queue's capacity, the gang plugin
// binds all of minMember or none.
const volcanoConf = `actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
`

// VolcanoQueueControllerProcess is the name under which StartGangSchedulers runs Volcano's
// controller-manager with its queue controller alone (its log is WorkDir/procs/<name>.log), and
// the process's /proc/<pid>/comm: it is started from a link of that name, so that it is not
// taken for the job controller of StartVolcanoControllers (VolcanoControllersComm).
const VolcanoQueueControllerProcess = "vc-queue-ctrl"

// StartGangSchedulers installs Volcano's and scheduler-plugins' CRDs and starts Volcano's
// scheduler (VolcanoSchedulerName) with its controller-manager's queue controller, and
// scheduler-plugins' scheduler with the Coscheduling plugin (CoschedulingSchedulerName),
// unless they already run. Down stops them.
func StartGangSchedulers(ctx context.Context, c Config, log func(string, ...any)) error {
	for _, b := range []string{"vc-scheduler", "vc-controller-manager", "sp-scheduler", "volcano-crds", "scheduler-plugins-crds"} {
		if _, err := os.Stat(c.Bin(b)); err != nil {
			return fmt.Errorf("%s is missing: run `make testbed-bins` first", c.Bin(b))
		}
	}
	if err := InstallGangCRDs(ctx, c); err != nil {
		return err
	}
	rc, err := c.RESTConfig()
	if err != nil {
		return err
	}
	p := c.Ports()
	dir := filepath.Join(c.WorkDir, "gang")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	volcanoHealth := fmt.Sprintf("http://127.0.0.1:%d/healthz", p.VolcanoHealth)
	if !httpOK(ctx, volcanoHealth) {
		conf := filepath.Join(dir, "volcano-scheduler.conf")
		if err := os.WriteFile(conf, []byte(volcanoConf), 0o644); err != nil {
			return err
		}
		logPath, err := StartProcess(c, "vc-scheduler", c.Bin("vc-scheduler"),
			"--kubeconfig", c.Kubeconfig(), "--scheduler-conf", conf, "--scheduler-name", VolcanoSchedulerName,
			"--leader-elect=false", "--schedule-period=200ms", "--default-queue=default",
			"--kube-api-qps=200", "--kube-api-burst=400",
			fmt.Sprintf("--listen-address=127.0.0.1:%d", p.VolcanoMetrics),
			"--enable-healthz", fmt.Sprintf("--healthz-address=127.0.0.1:%d", p.VolcanoHealth),
			"--cache-dumper=false")
		if err != nil {
			return err
		}
		if err := WaitHTTP(ctx, volcanoHealth, time.Minute); err != nil {
			return fmt.Errorf("Volcano's scheduler: %w; see %s", err, logPath)
		}
		log("Volcano scheduler %s running (schedulerName %s)", versionedBin(c.Bin("vc-scheduler")), VolcanoSchedulerName)
	}
	if err := startVolcanoQueueController(c, log); err != nil {
		return err
	}
	if err := waitVolcanoQueue(ctx, c, rc); err != nil {
		return err
	}
	spHealth := fmt.Sprintf("https://127.0.0.1:%d/healthz", p.CoschedulingSecure)
	if !httpsOK(ctx, spHealth) {
		conf := filepath.Join(dir, "coscheduling.yaml")
		cfg := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  kubeconfig: %q
  qps: 200
  burst: 400
profiles:
- schedulerName: %s
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 10
`, c.Kubeconfig(), CoschedulingSchedulerName)
		if err := os.WriteFile(conf, []byte(cfg), 0o644); err != nil {
			return err
		}
		logPath, err := StartProcess(c, "sp-scheduler", c.Bin("sp-scheduler"), "--config", conf,
			"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", p.CoschedulingSecure),
			// A gang rejected in PostFilter waits in the unschedulable queue until a Pod or
			// PodGroup event; scheduler-plugins' controller (not run here) updates PodGroup
			// status and so makes such events. Without it, retry unschedulable pods every 5 s.
			"--pod-max-in-unschedulable-pods-duration=5s")
		if err != nil {
			return err
		}
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			return httpsOK(ctx, spHealth), nil
		})
		if err != nil {
			return fmt.Errorf("scheduler-plugins' scheduler did not become healthy; see %s", logPath)
		}
		log("scheduler-plugins scheduler %s running (schedulerName %s, Coscheduling)", versionedBin(c.Bin("sp-scheduler")), CoschedulingSchedulerName)
	}
	return nil
}

// versionedBin names the binary a link of the testbed's bin directory points to by its
// versioned directory and name (volcano-v1.14.1/vc-scheduler), so that a log says which version
// ran; the base name of path when it is no link.
func versionedBin(path string) string {
	target, err := filepath.EvalSymlinks(path)
	if err != nil || target == path {
		return filepath.Base(path)
	}
	return filepath.Join(filepath.Base(filepath.Dir(target)), filepath.Base(target))
}

// InstallGangCRDs installs Volcano's and scheduler-plugins' CRDs (from their modules, copied to
// bin/testbed by `make testbed-bins`) and waits until they are served.
func InstallGangCRDs(ctx context.Context, c Config) error {
	rc, err := c.RESTConfig()
	if err != nil {
		return err
	}
	for dir, names := range gangCRDs {
		if err := run(ctx, c, "kubectl", "--kubeconfig", c.Kubeconfig(), "apply", "--server-side", "--force-conflicts", "-f", c.Bin(dir)); err != nil {
			return err
		}
		for _, n := range names {
			if err := waitCRDEstablished(ctx, rc, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// startVolcanoQueueController runs Volcano's controller-manager with its queue controller
// alone, unless it runs, as Volcano's own installation runs it beside the scheduler: Volcano's
// scheduler (v1.14.1; v1.10.0 did not look) enqueues no PodGroup whose queue's status.state is
// not Open, and the queue controller is what opens a queue, the default one the scheduler makes
// and each one a test makes. No health port: waitVolcanoQueue waits for its work.
func startVolcanoQueueController(c Config, log func(string, ...any)) error {
	if processRunning(c, VolcanoQueueControllerProcess) {
		return nil
	}
	if err := os.MkdirAll(c.procsDir(), 0o755); err != nil {
		return err
	}
	link := filepath.Join(c.procsDir(), VolcanoQueueControllerProcess)
	_ = os.Remove(link)
	if err := os.Symlink(c.Bin("vc-controller-manager"), link); err != nil {
		return err
	}
	if _, err := StartProcess(c, VolcanoQueueControllerProcess, link,
		"--kubeconfig", c.Kubeconfig(), "--leader-elect=false", "--controllers=+queue-controller",
		"--kube-api-qps=200", "--kube-api-burst=400"); err != nil {
		return err
	}
	log("Volcano queue controller %s running", versionedBin(c.Bin("vc-controller-manager")))
	return nil
}

// processRunning says whether the process StartProcess started as name still runs.
func processRunning(c Config, name string) bool {
	b, err := os.ReadFile(filepath.Join(c.procsDir(), name+".pid"))
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b)))
	return err == nil && alive(pid)
}

// waitVolcanoQueue waits for the default queue, which Volcano's scheduler creates as it starts,
// to be Open (its queue controller opens it).
func waitVolcanoQueue(ctx context.Context, c Config, rc *rest.Config) error {
	dc, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	queues := dc.Resource(schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "queues"})
	state := "absent"
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		q, err := queues.Get(ctx, "default", metav1.GetOptions{})
		if err != nil {
			state = "absent"
			return false, nil
		}
		state, _, _ = unstructured.NestedString(q.Object, "status", "state")
		return state == "Open", nil
	})
	if err != nil {
		return fmt.Errorf("Volcano's default queue is not Open (state %q): %w; see %s and %s", state, err,
			c.ProcessLog("vc-scheduler"), c.ProcessLog(VolcanoQueueControllerProcess))
	}
	return nil
}

// httpsOK is httpOK for a component serving its own self-signed certificate on 127.0.0.1.
func httpsOK(ctx context.Context, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback health probe of a self-signed local process
	resp, err := cl.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
