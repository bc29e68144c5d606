package backend

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// tmpl is what Inject writes on a pod template.
type tmpl struct {
	Annotations, Labels map[string]string
	SchedulerName       string
	// PodGroupName is spec.schedulingGroup.podGroupName ("" when unset).
	PodGroupName string
}

func templates(js *jobsetv1alpha2.JobSet) []tmpl {
	var out []tmpl
	for _, r := range js.Spec.ReplicatedJobs {
		pt := r.Template.Spec.Template
		t := tmpl{pt.Annotations, pt.Labels, pt.Spec.SchedulerName, ""}
		if sg := pt.Spec.SchedulingGroup; sg != nil {
			t.PodGroupName = ptr.Deref(sg.PodGroupName, "<nil>")
		}
		out = append(out, t)
	}
	return out
}

func TestInjectAndAdmitted(t *testing.T) {
	const group, queue, podGroup, task = contract.VolcanoGroupNameAnnotationKey, contract.VolcanoQueueNameAnnotationKey, contract.CoschedulingPodGroupLabelKey, contract.VolcanoTaskSpecAnnotationKey
	seq := map[string]string{inOrder: "InOrder"}
	cases := map[string]struct {
		annotations map[string]string
		settings    podgroups.Settings
		want        []tmpl
	}{
		"volcano with a queue": {nil, podgroups.Settings{Scheduler: contract.SchedulerVolcano, Queue: "research"}, []tmpl{
			{kv("keep", "me", group, "train", task, "a", queue, "research"), nil, "volcano-sched", ""},
			{kv(group, "train", task, "b", queue, "research"), nil, "my-own", ""},
		}},
		"volcano, sequenced, no queue": {seq, podgroups.Settings{Scheduler: contract.SchedulerVolcano}, []tmpl{
			{kv("keep", "me", group, "train-stage-0", task, "a"), nil, "volcano-sched", ""},
			{kv(group, "train-stage-1", task, "b"), nil, "my-own", ""},
		}},
		"coscheduling, sequenced": {seq, podgroups.Settings{Scheduler: contract.SchedulerCoscheduling}, []tmpl{
			{kv("keep", "me"), kv(podGroup, "train-stage-0"), "scheduler-plugins-scheduler", ""},
			{nil, kv(podGroup, "train-stage-1"), "my-own", ""},
		}},
		"kubernetes: the pod field, schedulerName left as it is": {nil, podgroups.Settings{Scheduler: contract.SchedulerKubernetes}, []tmpl{
			{kv("keep", "me"), nil, "", "train"},
			{nil, nil, "my-own", "train"},
		}},
		"kubernetes, sequenced": {seq, podgroups.Settings{Scheduler: contract.SchedulerKubernetes}, []tmpl{
			{kv("keep", "me"), nil, "", "train-stage-0"},
			{nil, nil, "my-own", "train-stage-1"},
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			js := jobSet("train", tc.annotations, "a", "b").Obj()
			js.Spec.ReplicatedJobs[0].Template.Spec.Template.Annotations = kv("keep", "me")
			js.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec.SchedulerName = "my-own"
			gangs, errs := podgroups.Gangs(js, tc.settings)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			b := byScheduler[tc.settings.Scheduler]
			if Admitted(b, js, gangs) {
				t.Error("Admitted before Inject")
			}
			Inject(b, js, tc.settings, gangs)
			if diff := cmp.Diff(tc.want, templates(js)); diff != "" {
				t.Errorf("templates (-want +got):\n%s", diff)
			}
			once := js.DeepCopy()
			Inject(b, js, tc.settings, gangs)
			if diff := cmp.Diff(once, js); diff != "" {
				t.Errorf("Inject twice differs from once (-once +twice):\n%s", diff)
			}
			if !Admitted(b, js, gangs) {
				t.Error("not Admitted after Inject")
			}
			// One template naming another gang (the other backend's key is left alone).
			pt := &js.Spec.ReplicatedJobs[1].Template.Spec.Template
			pt.Annotations = with(pt.Annotations, group, "other")
			pt.Labels = with(pt.Labels, podGroup, "other")
			pt.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("other")}
			if Admitted(b, js, gangs) {
				t.Error("Admitted with template 1 naming gang \"other\"")
			}
		})
	}
}

func TestSchedulerNameErrors(t *testing.T) {
	const at1 = "spec.replicatedJobs[1].template.spec.template.spec.schedulerName"
	for _, tc := range []struct {
		scheduler contract.Scheduler
		names     [2]string // of the two templates
		wantErrs  []string
	}{
		{contract.SchedulerVolcano, [2]string{"volcano-sched", "default-scheduler"}, []string{fe(field.ErrorTypeInvalid, at1)}},
		{contract.SchedulerVolcano, [2]string{"", "volcano-sched"}, nil},
		{contract.SchedulerCoscheduling, [2]string{"scheduler-plugins-scheduler", "volcano-sched"}, []string{fe(field.ErrorTypeInvalid, at1)}},
		// kube-scheduler serves any profile name it is configured with.
		{contract.SchedulerKubernetes, [2]string{"default-scheduler", "my-profile"}, nil},
	} {
		js := jobSet("train", nil, "a", "b").Obj()
		for i, n := range tc.names {
			js.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec.SchedulerName = n
		}
		if diff := cmp.Diff(tc.wantErrs, fieldErrs(SchedulerNameErrors(byScheduler[tc.scheduler], js))); diff != "" {
			t.Errorf("%s %q: errors (-want +got):\n%s", tc.scheduler, tc.names, diff)
		}
	}
}

func TestForeignGangs(t *testing.T) {
	labelled := func(key, value string) func(*jobsetv1alpha2.JobSet) {
		return func(js *jobsetv1alpha2.JobSet) {
			for i := range js.Spec.ReplicatedJobs {
				pt := &js.Spec.ReplicatedJobs[i].Template.Spec.Template
				pt.Labels = kv(key, value)
			}
		}
	}
	annotated := func(key, value string) func(*jobsetv1alpha2.JobSet) {
		return func(js *jobsetv1alpha2.JobSet) {
			for i := range js.Spec.ReplicatedJobs {
				js.Spec.ReplicatedJobs[i].Template.Spec.Template.Annotations = kv(key, value)
			}
		}
	}
	grouped := func(value string) func(*jobsetv1alpha2.JobSet) {
		return func(js *jobsetv1alpha2.JobSet) {
			for i := range js.Spec.ReplicatedJobs {
				js.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(value)}
			}
		}
	}
	const (
		label      = "FieldValueForbidden spec.replicatedJobs[%d].template.spec.template.metadata.labels[scheduling.x-k8s.io/pod-group]"
		annotation = "FieldValueForbidden spec.replicatedJobs[%d].template.spec.template.metadata.annotations[scheduling.k8s.io/group-name]"
		group      = "FieldValueForbidden spec.replicatedJobs[%d].template.spec.template.spec.schedulingGroup.podGroupName"
	)
	cases := map[string]struct {
		scheduler string
		sequenced bool
		trainJob  bool
		edit      func(*jobsetv1alpha2.JobSet)
		want      []string
		wantIn    string // a part of the first error's message
	}{
		"nothing named":                     {scheduler: "coscheduling"},
		"nothing named, made by a TrainJob": {scheduler: "coscheduling", trainJob: true},
		"Trainer's coscheduling label on its JobSet": {scheduler: "coscheduling", trainJob: true, edit: labelled(contract.CoschedulingPodGroupLabelKey, "train"),
			want: []string{fmt.Sprintf(label, 0), fmt.Sprintf(label, 1)}, wantIn: `set by Kubeflow Trainer for TrainJob "train": its runtime's spec.podGroupPolicy`},
		"Trainer's Volcano annotation, podgroups asked for coscheduling": {scheduler: "coscheduling", trainJob: true, edit: annotated(contract.VolcanoGroupNameAnnotationKey, "train"),
			want: []string{fmt.Sprintf(annotation, 0), fmt.Sprintf(annotation, 1)}, wantIn: "remove spec.podGroupPolicy from the TrainingRuntime"},
		"Trainer's Volcano annotation, podgroups asked for volcano": {scheduler: "volcano", trainJob: true, edit: annotated(contract.VolcanoGroupNameAnnotationKey, "train"),
			want: []string{fmt.Sprintf(annotation, 0), fmt.Sprintf(annotation, 1)}},
		"podgroups' own names, re-created (not a TrainJob's)": {scheduler: "coscheduling", edit: labelled(contract.CoschedulingPodGroupLabelKey, "train")},
		"podgroups' own stage names, re-created": {scheduler: "volcano", sequenced: true, edit: func(js *jobsetv1alpha2.JobSet) {
			js.Spec.ReplicatedJobs[0].Template.Spec.Template.Annotations = kv(contract.VolcanoGroupNameAnnotationKey, "train-stage-0")
			js.Spec.ReplicatedJobs[1].Template.Spec.Template.Annotations = kv(contract.VolcanoGroupNameAnnotationKey, "train-stage-1")
		}},
		"another gang's name": {scheduler: "coscheduling", edit: labelled(contract.CoschedulingPodGroupLabelKey, "someone-elses"),
			want: []string{fmt.Sprintf(label, 0), fmt.Sprintf(label, 1)}, wantIn: `names the gang "someone-elses", which podgroups did not name`},
		"the unsequenced name in a sequenced JobSet": {scheduler: "coscheduling", sequenced: true, edit: labelled(contract.CoschedulingPodGroupLabelKey, "train"),
			want: []string{fmt.Sprintf(label, 0), fmt.Sprintf(label, 1)}},
		"another backend's key": {scheduler: "coscheduling", edit: annotated(contract.VolcanoGroupNameAnnotationKey, "train"),
			want: []string{fmt.Sprintf(annotation, 0), fmt.Sprintf(annotation, 1)}},
		"kubernetes: podgroups' own name": {scheduler: "kubernetes", edit: grouped("train")},
		"kubernetes: a TrainJob's":        {scheduler: "kubernetes", trainJob: true, edit: grouped("train"), want: []string{fmt.Sprintf(group, 0), fmt.Sprintf(group, 1)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := kv(contract.SchedulerAnnotationKey, tc.scheduler)
			if tc.sequenced {
				a[inOrder] = "InOrder"
			}
			w := jobSet("train", a, "a", "b")
			if tc.trainJob {
				w.OwnedByTrainJob("train")
			}
			js := w.Obj()
			if tc.edit != nil {
				tc.edit(js)
			}
			s, gangs := read(t, js)
			got := podgroups.ForeignGangs(js, s, gangs)
			if diff := cmp.Diff(tc.want, fieldErrs(got)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if tc.wantIn != "" && (len(got) == 0 || !strings.Contains(got[0].Detail, tc.wantIn)) {
				t.Errorf("first error %v: want it to say %q", got, tc.wantIn)
			}
		})
	}
}
