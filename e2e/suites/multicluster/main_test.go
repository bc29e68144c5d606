// Package multicluster_test runs JobSets through Kueue's MultiKueue across two testbeds on this
// machine: a manager, where the JobSets are queued, and a worker, where MultiKueue creates and
// runs them. Both run the JobSet controller, the four add-ons and Kueue v0.19.2 (make
// kueue-bins); the manager's Kueue is a MultiKueue manager that reaches the worker through a
// kubeconfig in a Secret (the worker's admin kubeconfig, certificates inline, on 127.0.0.1). The
// worker publishes DRA devices for the per-Job claims; the manager publishes none.
//
// The manager is the testbed of TESTBED_PORT_BASE (its work directory .testbed-manager), the
// worker the one of TESTBED_WORKER_PORT_BASE (default: the manager's plus 1000; .testbed-worker1).
// The suite starts both and stops both (TESTBED_KEEP=1 leaves them running). It needs testbeds of
// its own: with KUBECONFIG or E2E_ADDONS=installed set it says so and runs nothing.
//
//   - TestDispatched: a JobSet that uses all four add-ons, queued in the manager, runs and
//     completes in the worker; its PVCs, claim and gangs exist in the worker only, watched in
//     both clusters from before its creation; its stages run in order there; the manager's copy
//     shows the worker's progress and `kubectl jobset-addons status` there names the worker. The
//     same JobSet without the add-ons' annotations, queued after it, is the timing control.
package multicluster_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
)

// The names of the MultiKueue set-up. The worker's ClusterQueue and LocalQueues have the same
// names as the manager's, as MultiKueue needs (it creates the worker's Workload in the
// LocalQueue of the manager's name).
const (
	workerName     = "worker1"
	admissionCheck = "multikueue"
	clusterQueue   = "cq"
	localQueue     = "lq"
	flavor         = "default"
	// queueNameLabel is Kueue's label naming a JobSet's LocalQueue.
	queueNameLabel = "kueue.x-k8s.io/queue-name"
	// multiKueueController is the AdmissionCheck controller of MultiKueue, and the spec.managedBy
	// Kueue gives the manager's JobSets queued in a ClusterQueue that uses it.
	multiKueueController = "kueue.x-k8s.io/multikueue"
)

// manager and worker are the suite's testbeds, beside defaults (the testbed of the environment,
// which the suite does not start itself).
var manager, worker, defaults framework.Config

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, "multicluster: "+format+"\n", args...) }

func TestMain(m *testing.M) { os.Exit(runSuite(m)) }

func runSuite(m *testing.M) int {
	if os.Getenv("KUBECONFIG") != "" || framework.Installed() {
		logf("SKIPPED: this suite starts two testbeds of its own (a MultiKueue manager and a worker); unset KUBECONFIG and E2E_ADDONS to run it")
		return 0
	}
	var err error
	defaults, err = framework.DefaultConfig()
	if err != nil {
		logf("%v", err)
		return 1
	}
	workerBase := defaults.PortBase + 1000
	if v := os.Getenv("TESTBED_WORKER_PORT_BASE"); v != "" {
		if workerBase, err = strconv.Atoi(v); err != nil {
			logf("TESTBED_WORKER_PORT_BASE=%q: %v", v, err)
			return 1
		}
	}
	manager, worker = defaults.Beside("manager", defaults.PortBase), defaults.Beside(workerName, workerBase)
	ctx := context.Background()
	start := time.Now()
	code := 1
	if err := setUp(ctx); err != nil {
		logf("setting up: %v", err)
	} else {
		logf("manager and worker ready in %s", time.Since(start).Round(time.Second))
		code = m.Run()
	}
	if os.Getenv("TESTBED_KEEP") != "" {
		logf("TESTBED_KEEP: leaving the manager (%s) and the worker (%s) running", manager.Kubeconfig(), worker.Kubeconfig())
		return code
	}
	for _, c := range []framework.Config{worker, manager} {
		if err := again("stopping "+c.Name, func() error { return framework.Down(ctx, c, logf) }); err != nil {
			logf("stopping %s: %v", c.Name, err)
			code = 1
		}
	}
	logf("suite done in %s", time.Since(start).Round(time.Second))
	return code
}

// setUp starts the worker, then the manager, each with Kueue and the four add-ons, and connects
// the manager's Kueue to the worker through the AdmissionCheck admissionCheck.
func setUp(ctx context.Context) error {
	if err := startWorker(ctx, worker); err != nil {
		return err
	}
	if err := startCluster(ctx, manager, true); err != nil {
		return err
	}
	mc, err := clientOf(manager)
	if err != nil {
		return err
	}
	if err := connect(ctx, mc, worker, workerName); err != nil {
		return err
	}
	return multiKueueQueue(ctx, mc, admissionCheck, clusterQueue, workerName)
}

// startCluster starts the testbed c with Kueue (a MultiKueue manager if mk) and the four add-ons.
func startCluster(ctx context.Context, c framework.Config, mk bool) error {
	if err := again(c.Name, func() error { return framework.Up(ctx, c, logf) }); err != nil {
		return err
	}
	if err := again(c.Name+": Kueue", func() error {
		return framework.StartKueue(ctx, c, framework.KueueOptions{MultiKueue: mk}, logf)
	}); err != nil {
		return err
	}
	for _, a := range framework.Addons {
		if err := again(c.Name+": "+a, func() error { return framework.StartAddon(ctx, c, a, nil, "--log-level=2") }); err != nil {
			return fmt.Errorf("%s: starting %s: %w", c.Name, a, err)
		}
	}
	return nil
}

// startWorker starts the worker c: startCluster, DRA devices for the per-Job claims, and
// Kueue's ClusterQueue clusterQueue.
func startWorker(ctx context.Context, c framework.Config) error {
	if err := startCluster(ctx, c, false); err != nil {
		return err
	}
	if err := framework.PublishDevices(ctx, c, framework.AllAddonsDeviceClass, 1); err != nil {
		return err
	}
	wc, err := clientOf(c)
	if err != nil {
		return err
	}
	if err := create(ctx, wc, queues(clusterQueue, nil)...); err != nil {
		return err
	}
	return waitActive(ctx, wc, "ClusterQueue", clusterQueue)
}

// connect makes the worker c known to the manager's Kueue as the MultiKueueCluster name: its
// kubeconfig in a Secret in Kueue's namespace.
func connect(ctx context.Context, mc client.Client, c framework.Config, name string) error {
	kubeconfig, err := c.InlineKubeconfig()
	if err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: framework.KueueNamespace, Name: name},
		StringData: map[string]string{"kubeconfig": string(kubeconfig)}}
	if err := create(ctx, mc, secret, framework.KueueObject("MultiKueueCluster", "", name, map[string]any{
		"clusterSource": map[string]any{"kubeConfig": map[string]any{"locationType": "Secret", "location": name}}})); err != nil {
		return err
	}
	return waitActive(ctx, mc, "MultiKueueCluster", name)
}

// multiKueueQueue makes in the manager a MultiKueueConfig of the clusters and an AdmissionCheck
// of MultiKueue, both named check, and the ClusterQueue cq that requires it.
func multiKueueQueue(ctx context.Context, mc client.Client, check, cq string, clusters ...string) error {
	var names []any
	for _, c := range clusters {
		names = append(names, c)
	}
	objs := []client.Object{
		framework.KueueObject("MultiKueueConfig", "", check, map[string]any{"clusters": names}),
		framework.KueueObject("AdmissionCheck", "", check, map[string]any{"controllerName": multiKueueController,
			"parameters": map[string]any{"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": check}}),
	}
	if err := create(ctx, mc, append(objs, queues(cq, []any{map[string]any{"name": check}})...)...); err != nil {
		return err
	}
	for _, o := range []struct{ kind, name string }{{"AdmissionCheck", check}, {"ClusterQueue", cq}} {
		if err := waitActive(ctx, mc, o.kind, o.name); err != nil {
			return fmt.Errorf("the manager's %s %s: %w", o.kind, o.name, err)
		}
	}
	return nil
}

// again runs start, and a second time if the first fails: ports above 32767 (the worker's by
// default, any TESTBED_PORT_BASE there) are in Linux's ephemeral range, where a client connection
// of the moment (seen: the apiserver's to its etcd) can hold the port a component is about to
// listen on, or one Down checks is free. Each start here finishes or redoes what a failed one
// left; Down may be called again.
func again(what string, start func() error) error {
	err := start()
	if err != nil {
		logf("%s: %v; starting it again", what, err)
		err = start()
	}
	return err
}

// queues are a cluster's ResourceFlavor and the ClusterQueue cq: quota for any test here, the
// admission checks given (the manager's MultiKueue check).
func queues(cq string, checks []any) []client.Object {
	spec := map[string]any{
		"namespaceSelector": map[string]any{},
		"resourceGroups": []any{map[string]any{
			"coveredResources": []any{"cpu"},
			"flavors":          []any{map[string]any{"name": flavor, "resources": []any{map[string]any{"name": "cpu", "nominalQuota": "100"}}}},
		}},
	}
	if checks != nil {
		spec["admissionChecksStrategy"] = map[string]any{"admissionChecks": checks}
	}
	return []client.Object{
		framework.KueueObject("ResourceFlavor", "", flavor, map[string]any{"nodeLabels": map[string]any{"type": "kwok"}}),
		framework.KueueObject("ClusterQueue", "", cq, spec),
	}
}

func create(ctx context.Context, c client.Client, objs ...client.Object) error {
	for _, o := range objs {
		if err := c.Create(ctx, o); client.IgnoreAlreadyExists(err) != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// waitActive waits until Kueue's object kind/name has its condition Active true.
func waitActive(ctx context.Context, c client.Client, kind, name string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		u := framework.KueueObject(kind, "", name, nil)
		if err := c.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
			last = err.Error()
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, cd := range conds {
			m, _ := cd.(map[string]any)
			if m["type"] == "Active" {
				last = fmt.Sprintf("%v: %v", m["reason"], m["message"])
				return m["status"] == "True", nil
			}
		}
		last = "no Active condition"
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("not Active: %w (last: %s)", err, last)
	}
	return nil
}

// clientOf is a client of the testbed c.
func clientOf(c framework.Config) (client.Client, error) {
	rc, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	return client.New(rc, client.Options{Scheme: framework.Scheme})
}
