package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/repo"
	"github.com/jobset-addons/jobset-addons/e2e/testbed"
)

// WithAddon runs the add-on controller name on the testbed for the suite: it starts before the
// first test with its webhooks registered from the chart, and stops after the last. probe, if
// given, must pass before the tests start (it shows the webhooks answer).
//
// With E2E_ADDONS=installed the add-on is already installed in the cluster (the chart, on kind:
// make e2e-kind): nothing is started, and the suite waits only for probe.
func WithAddon(e env.Environment, name string, probe func(ctx context.Context, c client.Client) error, args ...string) env.Environment {
	tb, err := testbed.DefaultConfig()
	if err != nil {
		panic(err)
	}
	return e.Setup(func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		c, err := client.New(cfg.Client().RESTConfig(), client.Options{Scheme: Scheme})
		if err != nil {
			return ctx, err
		}
		var p func(context.Context) error
		if probe != nil {
			p = func(ctx context.Context) error { return probe(ctx, c) }
		}
		if Installed() {
			return ctx, waitProbe(ctx, name, p)
		}
		return ctx, testbed.StartAddon(ctx, tb, name, p, args...)
	}).Finish(func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		if Installed() {
			return ctx, nil
		}
		return ctx, testbed.StopAddon(ctx, tb, name)
	})
}

// Installed says the add-ons run in the cluster, installed by the chart (E2E_ADDONS=installed),
// rather than as the testbed's local processes.
func Installed() bool { return os.Getenv("E2E_ADDONS") == "installed" }

// NeedsLocalAddon skips a test that kills, restarts or reconfigures the add-on's process when
// the add-ons are installed in the cluster; such tests run on the testbed (make e2e).
func NeedsLocalAddon(t *testing.T) {
	t.Helper()
	if Installed() {
		t.Skip("E2E_ADDONS=installed: this test stops or restarts the add-on's local process; it runs on the testbed (make e2e)")
	}
}

func waitProbe(ctx context.Context, name string, probe func(context.Context) error) error {
	if probe == nil {
		return nil
	}
	var last error
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		last = probe(ctx)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the installed %s does not answer its webhooks: %w (last: %v)", name, err, last)
	}
	return nil
}

// Objects decodes the YAML documents of file (kinds the Scheme knows) into objects.
func Objects(t *testing.T, file string) []client.Object {
	t.Helper()
	objs, err := ReadObjects(file)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// ReadObjects decodes the YAML documents of file (kinds the Scheme knows) into objects.
func ReadObjects(file string) ([]client.Object, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	decode := serializer.NewCodecFactory(Scheme).UniversalDeserializer().Decode
	var objs []client.Object
	for i, doc := range bytes.Split(data, []byte("\n---")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s, document %d: %w", file, i, err)
		}
		o, ok := obj.(client.Object)
		if !ok {
			return nil, fmt.Errorf("%s, document %d: %T is not an object", file, i, obj)
		}
		objs = append(objs, o)
	}
	return objs, nil
}

// CreateAll creates objs, tolerating objects (a namespace) that already exist.
func CreateAll(ctx context.Context, t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(ctx, o); client.IgnoreAlreadyExists(err) != nil {
			t.Fatalf("creating %T %s: %v", o, client.ObjectKeyFromObject(o), err)
		}
	}
}

// Example reads examples/dir/file, with every namespaced object put into namespace ns, and
// returns its JobSet (the last one, when there are several) and all its objects.
func Example(t *testing.T, dir, file, ns string) (*jobsetv1alpha2.JobSet, []client.Object) {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	objs := Objects(t, filepath.Join(root, "examples", dir, file))
	var js *jobsetv1alpha2.JobSet
	for _, o := range objs {
		if o.GetNamespace() != "" {
			o.SetNamespace(ns)
		}
		if j, ok := o.(*jobsetv1alpha2.JobSet); ok {
			js = j
		}
	}
	if js == nil {
		t.Fatalf("%s holds no JobSet", file)
	}
	return js, objs
}
