package webhook

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/gang"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

type classes map[string]int32

func (c classes) PriorityClassValue(name string) (int32, bool) {
	v, ok := c[name]
	return v, ok
}

func hook(installed ...contract.Scheduler) *JobSetWebhook {
	return &JobSetWebhook{
		Names:     gang.SchedulerNames{Volcano: "volcano", Coscheduling: "scheduler-plugins-scheduler"},
		Installed: func(s contract.Scheduler) bool { return slices.Contains(installed, s) },
		Classes:   classes{"high": 100, "low": 1},
	}
}

func newJobSet(annotations map[string]string, priorityClasses ...string) *jobsetv1alpha2.JobSet {
	js := &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ns", Annotations: annotations}}
	for i, pc := range priorityClasses {
		js.Spec.ReplicatedJobs = append(js.Spec.ReplicatedJobs, jobsetv1alpha2.ReplicatedJob{
			Name: string(rune('a' + i)), Replicas: 1,
			Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				PriorityClassName: pc, Containers: []corev1.Container{{Name: "main"}},
			}}}},
		})
	}
	return js
}

func request(op admissionv1.Operation) context.Context {
	return admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: op}})
}

func TestDefault(t *testing.T) {
	volcano := map[string]string{contract.SchedulerAnnotationKey: "volcano"}
	t.Run("create names the gang", func(t *testing.T) {
		js := newJobSet(volcano, "", "")
		if err := hook(contract.SchedulerVolcano).Default(request(admissionv1.Create), js); err != nil {
			t.Fatal(err)
		}
		for _, rj := range js.Spec.ReplicatedJobs {
			pt := rj.Template.Spec.Template
			if pt.Annotations[contract.VolcanoGroupNameAnnotationKey] != "train" || pt.Spec.SchedulerName != "volcano" {
				t.Errorf("%s: annotations %v, schedulerName %q", rj.Name, pt.Annotations, pt.Spec.SchedulerName)
			}
		}
	})
	for name, tc := range map[string]struct {
		ctx context.Context
		js  *jobsetv1alpha2.JobSet
	}{
		"update":                     {request(admissionv1.Update), newJobSet(volcano, "")},
		"no podgroups annotation":    {request(admissionv1.Create), newJobSet(nil, "")},
		"settings that do not parse": {request(admissionv1.Create), newJobSet(map[string]string{contract.SchedulerAnnotationKey: "nope"}, "")},
	} {
		t.Run(name+" changes nothing", func(t *testing.T) {
			before := tc.js.DeepCopy()
			if err := hook(contract.SchedulerVolcano).Default(tc.ctx, tc.js); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before, tc.js); diff != "" {
				t.Errorf("JobSet changed (-before +after):\n%s", diff)
			}
		})
	}
}

// causes are the field paths of a 422 Invalid error.
func causes(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var status *apierrors.StatusError
	if !errors.As(err, &status) || !apierrors.IsInvalid(err) || status.ErrStatus.Details == nil {
		t.Fatalf("error %v is not a 422 Invalid with details", err)
	}
	var out []string
	for _, c := range status.ErrStatus.Details.Causes {
		out = append(out, c.Field)
	}
	slices.Sort(out)
	return out
}

func TestValidateCreate(t *testing.T) {
	schedulerPath := contract.JobSetAnnotationPath(contract.SchedulerAnnotationKey).String()
	timeoutPath := contract.JobSetAnnotationPath(contract.ScheduleTimeoutAnnotationKey).String()
	js := newJobSet(map[string]string{contract.SchedulerAnnotationKey: "coscheduling", contract.ScheduleTimeoutAnnotationKey: "-1"}, "low", "high")
	js.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec.SchedulerName = "volcano"

	// Everything at once: a bad timeout, another scheduler in a template, coscheduling not
	// installed; and a warning for the two priority classes.
	warnings, err := hook(contract.SchedulerVolcano).ValidateCreate(context.Background(), js)
	want := []string{schedulerPath, timeoutPath, "spec.replicatedJobs[1].template.spec.template.spec.schedulerName"}
	slices.Sort(want)
	if diff := cmp.Diff(want, causes(t, err)); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}
	if len(warnings) != 1 {
		t.Errorf("warnings %q, want one about the priority classes", warnings)
	}

	// Installed and valid: admitted, still warned.
	js.Annotations[contract.ScheduleTimeoutAnnotationKey] = "30"
	js.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec.SchedulerName = ""
	warnings, err = hook(contract.SchedulerCoscheduling).ValidateCreate(context.Background(), js)
	if err != nil || len(warnings) != 1 {
		t.Errorf("ValidateCreate = %q, %v; want one warning and no error", warnings, err)
	}
	// A JobSet that does not use podgroups is not looked at.
	if warnings, err := hook().ValidateCreate(context.Background(), newJobSet(nil, "low", "high")); err != nil || len(warnings) > 0 {
		t.Errorf("plain JobSet: %q, %v", warnings, err)
	}
}

func TestValidateUpdate(t *testing.T) {
	base := map[string]string{
		contract.SchedulerAnnotationKey:        "volcano",
		contract.VolcanoQueueNameAnnotationKey: "research",
		contract.NetworkTopologyAnnotationKey:  "{mode: hard}",
	}
	for _, key := range gang.ImmutableKeys {
		for name, edit := range map[string]func(map[string]string){
			"changed": func(a map[string]string) { a[key] = a[key] + "x" },
			"removed": func(a map[string]string) { delete(a, key) },
		} {
			t.Run(key+" "+name, func(t *testing.T) {
				oldJS := newJobSet(map[string]string{}, "")
				for k, v := range base {
					oldJS.Annotations[k] = v
				}
				if key == contract.ScheduleTimeoutAnnotationKey {
					oldJS.Annotations[key] = "30"
				}
				newJS := oldJS.DeepCopy()
				edit(newJS.Annotations)
				_, err := hook(contract.SchedulerVolcano).ValidateUpdate(context.Background(), oldJS, newJS)
				if diff := cmp.Diff([]string{contract.JobSetAnnotationPath(key).String()}, causes(t, err)); diff != "" {
					t.Errorf("causes (-want +got):\n%s", diff)
				}
			})
		}
	}
	t.Run("added", func(t *testing.T) {
		oldJS := newJobSet(map[string]string{contract.SchedulerAnnotationKey: "volcano"}, "")
		newJS := oldJS.DeepCopy()
		newJS.Annotations[contract.VolcanoQueueNameAnnotationKey] = "q"
		_, err := hook(contract.SchedulerVolcano).ValidateUpdate(context.Background(), oldJS, newJS)
		if diff := cmp.Diff([]string{contract.JobSetAnnotationPath(contract.VolcanoQueueNameAnnotationKey).String()}, causes(t, err)); diff != "" {
			t.Errorf("causes (-want +got):\n%s", diff)
		}
	})
	t.Run("unchanged", func(t *testing.T) {
		js := newJobSet(map[string]string{contract.SchedulerAnnotationKey: "volcano", "other": "x"}, "")
		changed := js.DeepCopy()
		changed.Annotations["other"] = "y"
		if _, err := hook(contract.SchedulerVolcano).ValidateUpdate(context.Background(), js, changed); err != nil {
			t.Errorf("an unrelated change refused: %v", err)
		}
	})
}
