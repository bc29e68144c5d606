package podgroups_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

func annotationPath(key string) string { return "metadata.annotations[" + key + "]" }

var (
	schedulerPath   = annotationPath(contract.SchedulerAnnotationKey)
	queuePath       = annotationPath(contract.VolcanoQueueNameAnnotationKey)
	topologyPath    = annotationPath(contract.NetworkTopologyAnnotationKey)
	timeoutPath     = annotationPath(contract.ScheduleTimeoutAnnotationKey)
	topologyKeyPath = annotationPath(contract.TopologyKeyAnnotationKey)
	compositePath   = annotationPath(contract.CompositeAnnotationKey)
)

// jobSet is addontest's JobSet wrapper, by a short name for the table of cases.
type jobSet = addontest.JobSetWrapper

// TestBadInputRefused: every bad gang setting is refused at admission by the podgroups webhook,
// all its mistakes at once, each with its field path.
func TestBadInputRefused(t *testing.T) {
	volcano := func(j *jobSet) *jobSet { return j.Annotation(contract.SchedulerAnnotationKey, "volcano") }
	cosched := func(j *jobSet) *jobSet { return j.Annotation(contract.SchedulerAnnotationKey, "coscheduling") }
	native := func(j *jobSet) *jobSet { return j.Annotation(contract.SchedulerAnnotationKey, "kubernetes") }
	cases := []struct {
		name      string
		build     func(*jobSet)
		wantPaths []string
	}{
		{"unknown scheduler", func(j *jobSet) { j.Annotation(contract.SchedulerAnnotationKey, "kube-batch") }, []string{schedulerPath}},
		{"empty scheduler", func(j *jobSet) { j.Annotation(contract.SchedulerAnnotationKey, "") }, []string{schedulerPath}},
		{"topology without a scheduler", func(j *jobSet) { j.Annotation(contract.NetworkTopologyAnnotationKey, "{mode: hard}") }, []string{schedulerPath}},
		{"topology key without a scheduler", func(j *jobSet) { j.Annotation(contract.TopologyKeyAnnotationKey, "rack") }, []string{schedulerPath}},
		{"composite for volcano", func(j *jobSet) { volcano(j).Annotation(contract.CompositeAnnotationKey, "true") }, []string{compositePath}},
		{"composite for kubernetes not a boolean", func(j *jobSet) { native(j).Annotation(contract.CompositeAnnotationKey, "yes") }, []string{compositePath}},
		{"composite for kubernetes, sequenced", func(j *jobSet) {
			native(j).Annotation(contract.CompositeAnnotationKey, "true").InOrder()
		}, []string{compositePath}},
		{"queue for coscheduling", func(j *jobSet) { cosched(j).Annotation(contract.VolcanoQueueNameAnnotationKey, "research") }, []string{queuePath}},
		{"topology for coscheduling", func(j *jobSet) { cosched(j).Annotation(contract.NetworkTopologyAnnotationKey, "{mode: soft}") }, []string{topologyPath}},
		{"timeout for Volcano", func(j *jobSet) { volcano(j).Annotation(contract.ScheduleTimeoutAnnotationKey, "60") }, []string{timeoutPath}},
		{"timeout zero", func(j *jobSet) { cosched(j).Annotation(contract.ScheduleTimeoutAnnotationKey, "0") }, []string{timeoutPath}},
		{"timeout not a number", func(j *jobSet) { cosched(j).Annotation(contract.ScheduleTimeoutAnnotationKey, "10m") }, []string{timeoutPath}},
		{"topology mode", func(j *jobSet) { volcano(j).Annotation(contract.NetworkTopologyAnnotationKey, "{mode: medium}") }, []string{topologyPath + ".mode"}},
		{"topology tier", func(j *jobSet) {
			volcano(j).Annotation(contract.NetworkTopologyAnnotationKey, `{"mode":"hard","highestTierAllowed":0}`)
		}, []string{topologyPath + ".highestTierAllowed"}},
		{"topology unknown field", func(j *jobSet) { volcano(j).Annotation(contract.NetworkTopologyAnnotationKey, "{tier: 2}") }, []string{topologyPath + ".tier"}},
		{"topology not an object", func(j *jobSet) { volcano(j).Annotation(contract.NetworkTopologyAnnotationKey, "[hard]") }, []string{topologyPath}},
		{"queue not a name", func(j *jobSet) { volcano(j).Annotation(contract.VolcanoQueueNameAnnotationKey, "Research_Queue") }, []string{queuePath}},
		{"another scheduler in a template", func(j *jobSet) {
			volcano(j)
			j.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec.SchedulerName = "default-scheduler"
		}, []string{"spec.replicatedJobs[1].template.spec.template.spec.schedulerName"}},
		{"topology for kubernetes", func(j *jobSet) { native(j).Annotation(contract.NetworkTopologyAnnotationKey, "{mode: hard}") }, []string{topologyPath}},
		{"topology key for volcano", func(j *jobSet) { volcano(j).Annotation(contract.TopologyKeyAnnotationKey, "rack") }, []string{topologyKeyPath}},
		{"topology key for kubernetes not a label key", func(j *jobSet) { native(j).Annotation(contract.TopologyKeyAnnotationKey, "racks/of/nodes") }, []string{topologyKeyPath}},
		{"queue for kubernetes", func(j *jobSet) { native(j).Annotation(contract.VolcanoQueueNameAnnotationKey, "research") }, []string{queuePath}},
		{"nine stages for kubernetes", func(j *jobSet) {
			native(j).InOrder()
			for i := range 7 {
				j.ReplicatedJobs(replicated(fmt.Sprint("s", i), 1, 1, "1s"))
			}
		}, []string{"spec.replicatedJobs"}},
		{"several mistakes at once", func(j *jobSet) {
			volcano(j).Annotation(contract.NetworkTopologyAnnotationKey, "{mode: sideways, highestTierAllowed: -1}").
				Annotation(contract.ScheduleTimeoutAnnotationKey, "5")
			j.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.SchedulerName = "other"
		}, []string{topologyPath + ".mode", topologyPath + ".highestTierAllowed", timeoutPath, "spec.replicatedJobs[0].template.spec.template.spec.schedulerName"}},
	}
	f := features.New("bad gang settings are refused with their field paths").WithSetup("namespace", framework.Namespace)
	for _, tc := range cases {
		f = f.Assess(tc.name, func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if strings.Contains(tc.name, "kubernetes") {
				requireWorkloadAPI(t, cfg)
			}
			c := framework.Client(t, cfg)
			j := newJobSet(framework.NamespaceFrom(ctx), "bad", "").ReplicatedJobs(replicated("a", 1, 1, "1s"), replicated("b", 1, 1, "1s"))
			tc.build(j)
			js := j.Obj()
			framework.ExpectRefusedAt(ctx, t, c, js, "vjobset.podgroups.jobset-addons.io", tc.wantPaths)
			return ctx
		})
	}
	testenv.Test(t, f.Teardown(framework.DeleteNamespace).Feature())
}

// TestAnnotationsImmutable: the podgroups annotations can be neither changed, added nor removed
// by an update.
func TestAnnotationsImmutable(t *testing.T) {
	f := framework.NamespacedFeature("the podgroups annotations are immutable", "changes refused", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		js := newJobSet(framework.NamespaceFrom(ctx), "fixed", contract.SchedulerVolcano).ReplicatedJobs(replicated("a", 1, 1, "1h")).Obj()
		framework.CreateAll(ctx, t, c, js)
		for _, tc := range []struct {
			name     string
			edit     func()
			wantPath string
		}{
			{"scheduler changed", func() { js.Annotations[contract.SchedulerAnnotationKey] = "coscheduling" }, schedulerPath},
			{"queue added", func() { js.Annotations[contract.VolcanoQueueNameAnnotationKey] = "research" }, queuePath},
			{"topology added", func() { js.Annotations[contract.NetworkTopologyAnnotationKey] = "{mode: soft}" }, topologyPath},
			{"scheduler removed", func() { delete(js.Annotations, contract.SchedulerAnnotationKey) }, schedulerPath},
		} {
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
					return err
				}
				tc.edit()
				return c.Update(ctx, js)
			})
			paths, _ := framework.CausePaths(err)
			if err == nil || !slices.Equal(paths, []string{tc.wantPath}) {
				t.Errorf("%s: update = %v, want refused at %s", tc.name, err, tc.wantPath)
			}
		}
		return ctx
	})
	testenv.Test(t, f)
}

// TestPlainJobSetNeverReachesWebhooks: a JobSet without podgroups annotations runs on the
// default scheduler without any call to the podgroups webhooks and gets no PodGroup; the
// controller serves its metrics.
func TestPlainJobSetNeverReachesWebhooks(t *testing.T) {
	f := framework.NamespacedFeature("a JobSet without podgroups annotations never reaches the webhooks", "no webhook call", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		before := framework.WebhookCalls(ctx, t, cfg, addonName)
		js := newJobSet(ns, "plain", "").ReplicatedJobs(replicated("a", 1, 2, "1s")).Obj()
		framework.CreateAll(ctx, t, c, js)
		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		if after := framework.WebhookCalls(ctx, t, cfg, addonName); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("webhook calls went from %v to %v", before, after)
		}
		if len(before) == 0 {
			t.Errorf("no call of the podgroups webhooks counted at all: is the metric there?")
		}
		for _, s := range []contract.Scheduler{contract.SchedulerVolcano, contract.SchedulerCoscheduling, contract.SchedulerKubernetes} {
			if s == contract.SchedulerKubernetes && !framework.WorkloadAPIServed(t, cfg) {
				continue
			}
			if names, err := podGroupNames(ctx, c, ns, js.Name, s); err != nil || len(names) > 0 {
				t.Errorf("%s PodGroups of a plain JobSet: %v %v", s, names, err)
			}
		}
		framework.ExpectMetrics(ctx, t, addonName, "jobset_addons_podgroups_created_total", "jobset_addons_podgroups_deleted_total", "jobset_addons_podgroups_workloads_total",
			"jobset_addons_podgroups_reconcile_duration_seconds")
		return ctx
	})
	testenv.Test(t, f)
}
