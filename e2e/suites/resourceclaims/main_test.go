// Package resourceclaims_test runs the resourceclaims controller on the testbed, with its
// webhooks as the chart registers them, against the real JobSet controller and the real
// scheduler allocating devices from ResourceSlices the suite publishes (no DRA driver runs).
package resourceclaims_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

var testenv env.Environment

func TestMain(m *testing.M) {
	// podgroups too, for claims held by a Job's PodGroup (scheduler kubernetes).
	e := framework.WithAddon(framework.NewEnvironment(), "podgroups", probePodGroups, "--log-level=2")
	testenv = framework.WithAddon(e, "resourceclaims", probe, "--log-level=2").
		Setup(publishDevices).
		Finish(unpublishDevices)
	os.Exit(testenv.Run(m))
}

// probe passes once the apiserver calls both webhooks: a dry-run JobSet with a bad template is
// refused with the template's path, and a dry-run Job with templates comes back with its claim.
func probe(ctx context.Context, c client.Client) error {
	js := newJobSet(corev1.NamespaceDefault, "probe", rjob("w", 1, 1, `[{metadata: {name: a}, spec: {}, bad: 1}]`))
	err := c.Create(ctx, js, client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), "[0].bad") {
		return errors.New("the JobSet webhook did not refuse a bad template")
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceDefault, Name: "probe-w-0",
			Labels:      map[string]string{contract.JobSetNameLabelKey: "probe"},
			Annotations: map[string]string{contract.TemplatesAnnotationKey: `[{metadata: {name: a}, spec: {}}]`}},
		Spec: rjob("w", 1, 1, "").Template.Spec,
	}
	if err := c.Create(ctx, job, client.DryRunAll); err != nil {
		return err
	}
	if rc := job.Spec.Template.Spec.ResourceClaims; len(rc) != 1 || ptr.Deref(rc[0].ResourceClaimName, "") != "probe-w-0-a" {
		return errors.New("the Job came back without its claim")
	}
	return nil
}

// probePodGroups passes once the apiserver calls the podgroups webhooks: a dry-run JobSet asking
// for scheduler kubernetes comes back naming its PodGroup, or, where the apiserver does not serve
// the Workload API, is refused by podgroups for it.
func probePodGroups(ctx context.Context, c client.Client) error {
	js := newJobSet(corev1.NamespaceDefault, "probe", rjob("w", 1, 1, ""))
	js.Annotations = map[string]string{contract.SchedulerAnnotationKey: string(contract.SchedulerKubernetes)}
	err := c.Create(ctx, js, client.DryRunAll)
	if err != nil {
		if strings.Contains(err.Error(), "did not serve the Workload API") {
			return nil
		}
		return err
	}
	// The gang annotation, not spec.schedulingGroup, which a JobSet CRD before v0.12.0 prunes.
	if js.Spec.ReplicatedJobs[0].Template.Annotations[contract.GangAnnotationKey] != "probe" {
		return errors.New("the JobSet came back naming no gang")
	}
	return nil
}

// devices are the DeviceClasses and ResourceSlices of examples/resourceclaims.
func devices() ([]client.Object, error) {
	root, err := framework.RepoRoot()
	if err != nil {
		return nil, err
	}
	return framework.ReadObjects(filepath.Join(root, "examples/resourceclaims/testbed-devices.yaml"))
}

func publishDevices(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	return ctx, eachDevice(cfg, func(c client.Client, o client.Object) error {
		return client.IgnoreAlreadyExists(c.Create(ctx, o))
	})
}

func unpublishDevices(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	if _, err := os.Stat(cfg.KubeconfigFile()); err != nil {
		// The suite started the testbed and has stopped it already: the devices went with it.
		return ctx, nil
	}
	return ctx, eachDevice(cfg, func(c client.Client, o client.Object) error {
		return client.IgnoreNotFound(c.Delete(ctx, o))
	})
}

// eachDevice calls fn for each object of devices().
func eachDevice(cfg *envconf.Config, fn func(client.Client, client.Object) error) error {
	objs, err := devices()
	if err != nil {
		return err
	}
	c, err := client.New(cfg.Client().RESTConfig(), client.Options{Scheme: framework.Scheme})
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := fn(c, o); err != nil {
			return err
		}
	}
	return nil
}

// newJobSet is a JobSet of the given ReplicatedJobs.
func newJobSet(ns, name string, rjobs ...*addontest.ReplicatedJobWrapper) *jobsetv1alpha2.JobSet {
	return addontest.JobSet(ns, name).ReplicatedJobs(rjobs...).Obj()
}

// rjob has replicas Jobs of pods pods each (all at once, no retries), with containers worker
// and helper, whose pods run for 3 s; templates, when set, is its templates annotation.
func rjob(name string, replicas, pods int32, templates string) *addontest.ReplicatedJobWrapper {
	rj := addontest.ReplicatedJob(name).Replicas(replicas).Pods(pods).CompletionMode(nil).
		Containers("worker", "helper").PodAnnotation(framework.DelayAnnotationKey, "3s")
	if templates != "" {
		rj.JobAnnotation(contract.TemplatesAnnotationKey, templates)
	}
	return rj
}
