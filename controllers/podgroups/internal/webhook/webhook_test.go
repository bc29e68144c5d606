package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/backend"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

const (
	schedulerKey  = contract.SchedulerAnnotationKey
	queueKey      = contract.VolcanoQueueNameAnnotationKey
	topologyKey   = contract.NetworkTopologyAnnotationKey
	timeoutKey    = contract.ScheduleTimeoutAnnotationKey
	inOrderKey    = "sequencer.jobset-addons.io/execution-policy"
	schedulerPath = "metadata.annotations[podgroups.jobset-addons.io/scheduler]"
	timeoutPath   = "metadata.annotations[podgroups.jobset-addons.io/schedule-timeout-seconds]"
)

type classes map[string]int32

func (c classes) PriorityClassValue(name string) (int32, bool) {
	v, ok := c[name]
	return v, ok
}

// hook is the webhook of a cluster where the installed backends have their CRD.
func hook(installed ...contract.Scheduler) *JobSetWebhook {
	return &JobSetWebhook{
		Backends:  backend.NewRegistry(backend.Names{Volcano: "volcano-sched", Coscheduling: "scheduler-plugins-scheduler"}),
		Installed: func(s contract.Scheduler) bool { return slices.Contains(installed, s) },
		Classes:   classes{"high": 100, "low": 1},
	}
}

func kv(kvs ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i < len(kvs); i += 2 {
		m[kvs[i]] = kvs[i+1]
	}
	return m
}

func pod(js *jobsetv1alpha2.JobSet, i int) *corev1.PodTemplateSpec {
	return &js.Spec.ReplicatedJobs[i].Template.Spec.Template
}

func request(op admissionv1.Operation) context.Context {
	return admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: op}})
}

func TestDefault(t *testing.T) {
	long := strings.Repeat("n", 60)
	cases := map[string]struct {
		op   admissionv1.Operation
		js   *jobsetv1alpha2.JobSet
		want func(*jobsetv1alpha2.JobSet) // what Default changes; nil: nothing
	}{
		"create: volcano with a queue": {
			op: admissionv1.Create,
			js: addontest.JobSet("ns", "train").Annotate(schedulerKey, "volcano", queueKey, "research").ReplicatedJobs(
				addontest.ReplicatedJob("a"),
				addontest.ReplicatedJob("b").SchedulerName("my-own"),
			).Obj(),
			want: func(js *jobsetv1alpha2.JobSet) {
				for i, task := range []string{"a", "b"} {
					pod(js, i).Annotations = kv(contract.VolcanoGroupNameAnnotationKey, "train", contract.VolcanoTaskSpecAnnotationKey, task, queueKey, "research")
					js.Spec.ReplicatedJobs[i].Template.Annotations = kv(contract.GangAnnotationKey, "train")
				}
				pod(js, 0).Spec.SchedulerName = "volcano-sched"
			},
		},
		"create: coscheduling, sequenced": {
			op: admissionv1.Create,
			js: addontest.JobSet("ns", "train").Annotate(schedulerKey, "coscheduling", inOrderKey, "InOrder").ReplicatedJobs(
				addontest.ReplicatedJob("a"),
				addontest.ReplicatedJob("b"),
			).Obj(),
			want: func(js *jobsetv1alpha2.JobSet) {
				pod(js, 0).Labels = kv(contract.CoschedulingPodGroupLabelKey, "train-stage-0")
				pod(js, 1).Labels = kv(contract.CoschedulingPodGroupLabelKey, "train-stage-1")
				js.Spec.ReplicatedJobs[0].Template.Annotations = kv(contract.GangAnnotationKey, "train-stage-0")
				js.Spec.ReplicatedJobs[1].Template.Annotations = kv(contract.GangAnnotationKey, "train-stage-1")
				pod(js, 0).Spec.SchedulerName = "scheduler-plugins-scheduler"
				pod(js, 1).Spec.SchedulerName = "scheduler-plugins-scheduler"
			},
		},
		"create: kubernetes, sequenced: the pod field, schedulerName kept": {
			op: admissionv1.Create,
			js: addontest.JobSet("ns", "train").Annotate(schedulerKey, "kubernetes", inOrderKey, "InOrder").ReplicatedJobs(
				addontest.ReplicatedJob("a"),
				addontest.ReplicatedJob("b").SchedulerName("my-profile"),
			).Obj(),
			want: func(js *jobsetv1alpha2.JobSet) {
				pod(js, 0).Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("train-stage-0")}
				pod(js, 1).Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("train-stage-1")}
				js.Spec.ReplicatedJobs[0].Template.Annotations = kv(contract.GangAnnotationKey, "train-stage-0")
				js.Spec.ReplicatedJobs[1].Template.Annotations = kv(contract.GangAnnotationKey, "train-stage-1")
			},
		},
		"update": {
			op: admissionv1.Update,
			js: addontest.JobSet("ns", "train").Annotate(schedulerKey, "volcano").ReplicatedJobs(addontest.ReplicatedJob("a")).Obj(),
		},
		"create: no podgroups annotation": {
			op: admissionv1.Create,
			js: addontest.JobSet("ns", "train").Annotate("other", "x").ReplicatedJobs(addontest.ReplicatedJob("a")).Obj(),
		},
		"create: only Volcano's queue annotation": {
			op: admissionv1.Create,
			js: addontest.JobSet("ns", "train").Annotate(queueKey, "research").ReplicatedJobs(addontest.ReplicatedJob("a")).Obj(),
		},
		"create: a setting the scheduler has not": {
			op: admissionv1.Create,
			js: addontest.JobSet("ns", "train").Annotate(schedulerKey, "volcano", timeoutKey, "30").ReplicatedJobs(addontest.ReplicatedJob("a")).Obj(),
		},
		"create: settings that do not parse": {
			op: admissionv1.Create,
			js: addontest.JobSet("ns", "train").Annotate(schedulerKey, "slurm").ReplicatedJobs(addontest.ReplicatedJob("a")).Obj(),
		},
		"create: gang names that are too long": {op: admissionv1.Create, js: addontest.JobSet("ns", long).Annotate(schedulerKey, "coscheduling", inOrderKey, "InOrder").ReplicatedJobs(
			addontest.ReplicatedJob("a"),
			addontest.ReplicatedJob("b"),
		).Obj()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want := tc.js.DeepCopy()
			if tc.want != nil {
				tc.want(want)
			}
			if err := hook(contract.SchedulerVolcano, contract.SchedulerCoscheduling).Default(request(tc.op), tc.js); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, tc.js); diff != "" {
				t.Errorf("JobSet (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDefaultUpdateRestoresSchedulingGroup: an update that drops the kubernetes backend's
// spec.schedulingGroup from a pod template (Kueue v0.17.0, built on Kubernetes 1.35's API,
// rewrites spec.replicatedJobs without the field when it admits a JobSet) gets it back from the
// JobSet as it was; what the update changed on purpose (Kueue's nodeSelector) stays; other
// backends and templates that kept or changed their group are left alone.
func TestDefaultUpdateRestoresSchedulingGroup(t *testing.T) {
	group := func(name string) *corev1.PodSchedulingGroup {
		return &corev1.PodSchedulingGroup{PodGroupName: ptr.To(name)}
	}
	admitted := func(scheduler string) *jobsetv1alpha2.JobSet {
		js := addontest.JobSet("ns", "train").Annotate(schedulerKey, scheduler, inOrderKey, "InOrder").ReplicatedJobs(
			addontest.ReplicatedJob("a"),
			addontest.ReplicatedJob("b"),
		).Obj()
		pod(js, 0).Spec.SchedulingGroup = group("train-stage-0")
		pod(js, 1).Spec.SchedulingGroup = group("train-stage-1")
		return js
	}
	cases := map[string]struct {
		old    *jobsetv1alpha2.JobSet
		update func(*jobsetv1alpha2.JobSet) // what the client's update did
		want   func(*jobsetv1alpha2.JobSet) // what Default changes on top; nil: nothing
	}{
		"kubernetes: both dropped, nodeSelector added": {
			old: admitted("kubernetes"),
			update: func(js *jobsetv1alpha2.JobSet) {
				for i := range 2 {
					pod(js, i).Spec.SchedulingGroup = nil
					pod(js, i).Spec.NodeSelector = kv("type", "kwok")
				}
			},
			want: func(js *jobsetv1alpha2.JobSet) {
				pod(js, 0).Spec.SchedulingGroup = group("train-stage-0")
				pod(js, 1).Spec.SchedulingGroup = group("train-stage-1")
			},
		},
		"kubernetes: one dropped, one changed": {
			old: admitted("kubernetes"),
			update: func(js *jobsetv1alpha2.JobSet) {
				pod(js, 0).Spec.SchedulingGroup = nil
				pod(js, 1).Spec.SchedulingGroup = group("other")
			},
			want: func(js *jobsetv1alpha2.JobSet) { pod(js, 0).Spec.SchedulingGroup = group("train-stage-0") },
		},
		"kubernetes: nothing dropped": {old: admitted("kubernetes"), update: func(js *jobsetv1alpha2.JobSet) { js.Labels = kv("x", "y") }},
		"coscheduling: not touched": {
			old:    admitted("coscheduling"),
			update: func(js *jobsetv1alpha2.JobSet) { pod(js, 0).Spec.SchedulingGroup = nil },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			js := tc.old.DeepCopy()
			tc.update(js)
			want := js.DeepCopy()
			if tc.want != nil {
				tc.want(want)
			}
			raw, err := json.Marshal(tc.old)
			if err != nil {
				t.Fatal(err)
			}
			ctx := admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Update, OldObject: runtime.RawExtension{Raw: raw},
			}})
			if err := hook(contract.SchedulerKubernetes, contract.SchedulerCoscheduling).Default(ctx, js); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, js); diff != "" {
				t.Errorf("JobSet (-want +got):\n%s", diff)
			}
		})
	}
}

func fe(t field.ErrorType, path string) string { return string(t) + " " + path }

// causes are "Type Field" of the causes of a 422 Invalid error about the JobSet.
func causes(t *testing.T, err error, jobSet string) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var status *apierrors.StatusError
	if !errors.As(err, &status) || status.ErrStatus.Code != http.StatusUnprocessableEntity || !apierrors.IsInvalid(err) {
		t.Fatalf("error %v is not a 422 Invalid", err)
	}
	d := status.ErrStatus.Details
	if d == nil || d.Kind != "JobSet" || d.Group != jobsetv1alpha2.GroupVersion.Group || d.Name != jobSet {
		t.Fatalf("error details %+v: want JobSet %s", d, jobSet)
	}
	var out []string
	for _, c := range d.Causes {
		out = append(out, string(c.Type)+" "+c.Field)
	}
	return out
}

func TestValidate(t *testing.T) {
	long := strings.Repeat("n", 60)
	gpu := `[{metadata: {name: gpu}, spec: {devices: {requests: [{name: g, exactly: {deviceClassName: gpu}}]}}}]`
	volcano, coscheduling := contract.SchedulerVolcano, contract.SchedulerCoscheduling
	cases := map[string]struct {
		js        *jobsetv1alpha2.JobSet
		installed []contract.Scheduler
		wantErrs  []string
		message   string     // what the errors must mention
		warnings  [][]string // what each warning must mention
	}{
		"every problem in one list": {
			js: addontest.JobSet("ns", long).Annotate(schedulerKey, "coscheduling", timeoutKey, "abc", inOrderKey, "InOrder").ReplicatedJobs(
				addontest.ReplicatedJob("a").PriorityClass("low"),
				addontest.ReplicatedJob("b").SchedulerName("volcano-sched").PriorityClass("high"),
			).Obj(),
			installed: []contract.Scheduler{volcano},
			wantErrs: []string{
				fe(field.ErrorTypeInvalid, timeoutPath),
				fe(field.ErrorTypeInvalid, schedulerPath),
				fe(field.ErrorTypeInvalid, "spec.replicatedJobs[1].template.spec.template.spec.schedulerName"),
				fe(field.ErrorTypeInvalid, "metadata.name"),
			},
		},
		"managed elsewhere (MultiKueue's manager): only what the JobSet says itself": {
			js: addontest.JobSet("ns", long).Annotate(schedulerKey, "coscheduling", timeoutKey, "abc", inOrderKey, "InOrder").ReplicatedJobs(
				addontest.ReplicatedJob("a").PriorityClass("low"),
				addontest.ReplicatedJob("b").SchedulerName("volcano-sched").PriorityClass("high"),
			).ManagedBy("kueue.x-k8s.io/multikueue").Obj(),
			installed: []contract.Scheduler{volcano}, // coscheduling not here: the worker's to check
			wantErrs: []string{
				fe(field.ErrorTypeInvalid, timeoutPath),
				fe(field.ErrorTypeInvalid, "metadata.name"),
			},
		},
		"valid, priority classes differ in one gang": {
			js: addontest.JobSet("ns", "train").Annotate(schedulerKey, "volcano", queueKey, "research").ReplicatedJobs(
				addontest.ReplicatedJob("a").SchedulerName("volcano-sched").PriorityClass("low").Requests("1", "1Gi"),
				addontest.ReplicatedJob("b").PriorityClass("high").Requests("1", "1Gi"),
			).Obj(),
			installed: []contract.Scheduler{volcano},
			warnings:  [][]string{{"train", `"low"`, `"high"`}},
		},
		"valid, volcano, launcher pods that request nothing": {
			js: addontest.JobSet("ns", "mpi").Annotate(schedulerKey, "volcano").ReplicatedJobs(
				addontest.ReplicatedJob("launcher"),
				addontest.ReplicatedJob("worker").Replicas(4).Requests("1", "1Gi"),
			).Obj(),
			installed: []contract.Scheduler{volcano},
			warnings:  [][]string{{"spec.replicatedJobs[launcher]", "request no CPU", "counts such a pod as placed before it is", "gang mpi"}},
		},
		"valid, sequenced, one class per gang": {
			js: addontest.JobSet("ns", "train").Annotate(schedulerKey, "coscheduling", timeoutKey, "30", inOrderKey, "InOrder").ReplicatedJobs(
				addontest.ReplicatedJob("a").PriorityClass("low"),
				addontest.ReplicatedJob("b").PriorityClass("high"),
			).Obj(),
			installed: []contract.Scheduler{coscheduling},
		},
		"kubernetes: any schedulerName, one warning for two classes": {
			js: addontest.JobSet("ns", "train").Annotate(schedulerKey, "kubernetes").ReplicatedJobs(
				addontest.ReplicatedJob("a").SchedulerName("my-profile").PriorityClass("low"),
				addontest.ReplicatedJob("b").PriorityClass("high"),
			).Obj(),
			installed: []contract.Scheduler{contract.SchedulerKubernetes},
			warnings:  [][]string{{"train", `"low"`, `"high"`}},
		},
		"kubernetes: the Workload API not served": {
			js:       addontest.JobSet("ns", "train").Annotate(schedulerKey, "kubernetes").ReplicatedJobs(addontest.ReplicatedJob("a")).Obj(),
			wantErrs: []string{fe(field.ErrorTypeInvalid, schedulerPath)},
			message:  "GenericWorkload",
		},
		"kubernetes: network topology refused": {
			js:        addontest.JobSet("ns", "train").Annotate(schedulerKey, "kubernetes", topologyKey, "{mode: hard}").ReplicatedJobs(addontest.ReplicatedJob("a")).Obj(),
			installed: []contract.Scheduler{contract.SchedulerKubernetes},
			wantErrs:  []string{fe(field.ErrorTypeForbidden, "metadata.annotations[podgroups.jobset-addons.io/network-topology]")},
			message:   "topology-key",
		},
		"coscheduling: a Job's pods sharing its claims, warned of the deadlock": {
			js: addontest.JobSet("ns", "train").Annotate(schedulerKey, "coscheduling").ReplicatedJobs(
				addontest.ReplicatedJob("a"),
				addontest.ReplicatedJob("b").Pods(2).JobAnnotation(contract.TemplatesAnnotationKey, gpu),
				addontest.ReplicatedJob("c").JobAnnotation(contract.TemplatesAnnotationKey, gpu), // one pod a Job: no warning
			).Obj(),
			installed: []contract.Scheduler{coscheduling},
			warnings:  [][]string{{"spec.replicatedJobs[b]", "2 pods", "deadlock", "kubernetes"}},
		},
		"kubernetes: a Job's pods sharing its claims, no warning": {
			js: addontest.JobSet("ns", "train").Annotate(schedulerKey, "kubernetes").
				ReplicatedJobs(addontest.ReplicatedJob("b").Pods(2).JobAnnotation(contract.TemplatesAnnotationKey, gpu)).Obj(),
			installed: []contract.Scheduler{contract.SchedulerKubernetes},
		},
		"not installed, otherwise valid": {
			js:       addontest.JobSet("ns", "train").Annotate(schedulerKey, "volcano").ReplicatedJobs(addontest.ReplicatedJob("a").Requests("1", "1Gi")).Obj(),
			wantErrs: []string{fe(field.ErrorTypeInvalid, schedulerPath)},
		},
		"unknown scheduler: nothing else is checked": {
			js: addontest.JobSet("ns", long).Annotate(schedulerKey, "slurm", inOrderKey, "InOrder").ReplicatedJobs(
				addontest.ReplicatedJob("a").SchedulerName("default-scheduler").PriorityClass("low"),
				addontest.ReplicatedJob("b").PriorityClass("high"),
			).Obj(),
			wantErrs: []string{fe(field.ErrorTypeNotSupported, schedulerPath)},
		},
		"topology without scheduler": {js: addontest.JobSet("ns", "train").Annotate(topologyKey, "{mode: hard}").ReplicatedJobs(addontest.ReplicatedJob("a")).Obj(), wantErrs: []string{fe(field.ErrorTypeRequired, schedulerPath)}},
		"timeout without scheduler":  {js: addontest.JobSet("ns", "train").Annotate(timeoutKey, "30").ReplicatedJobs(addontest.ReplicatedJob("a")).Obj(), wantErrs: []string{fe(field.ErrorTypeRequired, schedulerPath)}},
		"plain JobSet": {js: addontest.JobSet("ns", "train").ReplicatedJobs(
			addontest.ReplicatedJob("a").SchedulerName("default-scheduler").PriorityClass("low"),
			addontest.ReplicatedJob("b").PriorityClass("high"),
		).Obj()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := hook(tc.installed...)
			warnings, errs := w.Validate(context.Background(), tc.js)
			var got []string
			for _, e := range errs {
				got = append(got, fe(e.Type, e.Field))
			}
			if diff := cmp.Diff(tc.wantErrs, got); diff != "" {
				t.Errorf("Validate errors (-want +got):\n%s\n%v", diff, errs)
			}
			if !strings.Contains(fmt.Sprint(errs), tc.message) {
				t.Errorf("errors %v do not mention %q", errs, tc.message)
			}
			if len(warnings) != len(tc.warnings) {
				t.Fatalf("warnings %q, want %d", warnings, len(tc.warnings))
			}
			for i, mentions := range tc.warnings {
				for _, m := range mentions {
					if !strings.Contains(warnings[i], m) {
						t.Errorf("warning %q does not mention %s", warnings[i], m)
					}
				}
			}
			createWarnings, err := w.ValidateCreate(context.Background(), tc.js)
			if diff := cmp.Diff(tc.wantErrs, causes(t, err, tc.js.Name)); diff != "" {
				t.Errorf("ValidateCreate causes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(warnings, createWarnings); diff != "" {
				t.Errorf("ValidateCreate warnings (-Validate +ValidateCreate):\n%s", diff)
			}
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	// Each key with two values; ValidateUpdate does not parse them.
	keys := []struct{ key, from, to string }{
		{schedulerKey, "volcano", "coscheduling"},
		{queueKey, "research", "production"},
		{topologyKey, "{mode: hard}", "{mode: soft}"},
		{timeoutKey, "30", "60"},
		{contract.TopologyKeyAnnotationKey, "rack", "zone"},
	}
	path := func(key string) string { return contract.JobSetAnnotationPath(key).String() }
	for _, k := range keys {
		for name, tc := range map[string]struct{ old, new map[string]string }{
			"changed": {kv(k.key, k.from), kv(k.key, k.to)},
			"added":   {kv(), kv(k.key, k.to)},
			"removed": {kv(k.key, k.from), kv()},
		} {
			t.Run(k.key+" "+name, func(t *testing.T) {
				oldJS := addontest.JobSet("ns", "train").Annotations(tc.old).ReplicatedJobs(addontest.ReplicatedJob("a")).Obj()
				newJS := addontest.JobSet("ns", "train").Annotations(tc.new).ReplicatedJobs(addontest.ReplicatedJob("a")).Obj()
				warnings, err := hook().ValidateUpdate(context.Background(), oldJS, newJS)
				if diff := cmp.Diff([]string{fe(field.ErrorTypeForbidden, path(k.key))}, causes(t, err, "train")); diff != "" {
					t.Errorf("causes (-want +got):\n%s", diff)
				}
				if warnings != nil {
					t.Errorf("warnings %q", warnings)
				}
			})
		}
	}
	t.Run("all changed", func(t *testing.T) {
		oldJS, newJS := addontest.JobSet("ns", "train"), addontest.JobSet("ns", "train")
		var want []string
		for _, k := range keys {
			oldJS.Annotation(k.key, k.from)
			newJS.Annotation(k.key, k.to)
			want = append(want, fe(field.ErrorTypeForbidden, path(k.key)))
		}
		_, err := hook().ValidateUpdate(context.Background(), oldJS.Obj(), newJS.Obj())
		if diff := cmp.Diff(want, causes(t, err, "train")); diff != "" {
			t.Errorf("causes (-want +got):\n%s", diff)
		}
	})
	t.Run("unchanged", func(t *testing.T) {
		oldJS := addontest.JobSet("ns", "train").Annotate(schedulerKey, "volcano", queueKey, "research", topologyKey, "{mode: hard}", "other", "x").
			ReplicatedJobs(addontest.ReplicatedJob("a")).Obj()
		newJS := oldJS.DeepCopy()
		newJS.Annotations["other"] = "y"
		newJS.Spec.ReplicatedJobs[0].Replicas = 2
		if warnings, err := hook().ValidateUpdate(context.Background(), oldJS, newJS); err != nil || warnings != nil {
			t.Errorf("ValidateUpdate = %q, %v; want nothing", warnings, err)
		}
	})
}

// A JobSet made by Kubeflow Trainer for a TrainJob whose runtime has a podGroupPolicy carries
// Trainer's gang label; if its template also asks podgroups for a gang, Default refuses it with
// the label's path, before naming anything.
func TestDefaultRefusesTrainersGang(t *testing.T) {
	js := addontest.JobSet("ns", "train").Annotate(schedulerKey, "coscheduling").OwnedByTrainJob("train").
		ReplicatedJobs(addontest.ReplicatedJob("node").PodLabel(contract.CoschedulingPodGroupLabelKey, "train")).Obj()
	before := js.DeepCopy()
	err := hook(contract.SchedulerCoscheduling).Default(request(admissionv1.Create), js)
	want := []string{fe(field.ErrorTypeForbidden, "spec.replicatedJobs[0].template.spec.template.metadata.labels[scheduling.x-k8s.io/pod-group]")}
	if diff := cmp.Diff(want, causes(t, err, "train")); diff != "" {
		t.Fatalf("causes (-want +got):\n%s", diff)
	}
	if !strings.Contains(err.Error(), `TrainJob "train"`) || !strings.Contains(err.Error(), "spec.podGroupPolicy") {
		t.Errorf("error %q: want it to name the TrainJob and spec.podGroupPolicy", err)
	}
	if diff := cmp.Diff(before, js); diff != "" {
		t.Errorf("a refused JobSet was changed (-before +after):\n%s", diff)
	}

	// The same JobSet without Trainer's label (a runtime without podGroupPolicy) is named.
	js = addontest.JobSet("ns", "train").Annotate(schedulerKey, "coscheduling").OwnedByTrainJob("train").
		ReplicatedJobs(addontest.ReplicatedJob("node")).Obj()
	if err := hook(contract.SchedulerCoscheduling).Default(request(admissionv1.Create), js); err != nil {
		t.Fatal(err)
	}
	if got := pod(js, 0).Labels[contract.CoschedulingPodGroupLabelKey]; got != "train" {
		t.Errorf("pod-group label %q, want train", got)
	}
}
