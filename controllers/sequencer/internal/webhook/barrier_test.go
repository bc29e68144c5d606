package webhook

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/sequencer"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

const (
	barrierPath = "metadata.annotations[sequencer.jobset-addons.io/start-barrier]"
	timeoutPath = "metadata.annotations[sequencer.jobset-addons.io/start-barrier-timeout]"
	openedPath  = "metadata.annotations[sequencer.jobset-addons.io/start-barrier-opened]"
	podSpec0    = "spec.replicatedJobs[0].template.spec.template.spec"
)

// testBarrier is the barrier container's settings in these tests.
var testBarrier = sequencer.BarrierSettings{Image: "example.com/barrier:v1", Resources: sequencer.DefaultBarrierResources()}

// admitted is js as the webhooks see it: defaulted, then validated.
func admitted(t *testing.T, js *jobsetv1alpha2.JobSet) field.ErrorList {
	t.Helper()
	if err := (&JobSetWebhook{Barrier: testBarrier}).Default(context.Background(), js); err != nil {
		t.Fatal(err)
	}
	return sequencer.ValidateCreate(js)
}

func TestBarrierAdmission(t *testing.T) {
	barrier := func(mode string) *addontest.JobSetWrapper {
		return addontest.JobSet("ns", "a").Annotation(contract.StartBarrierAnnotationKey, mode)
	}
	cases := map[string]struct {
		js       *jobsetv1alpha2.JobSet
		wantErrs []fieldErr
	}{
		"JobSet barrier": {js: barrier("JobSet").ReplicatedJobs(addontest.ReplicatedJob("x").Pods(4).InitContainers("download")).Obj()},
		"Stage barrier with stages": {js: barrier("Stage").InOrder().
			ReplicatedJobs(addontest.ReplicatedJob("x"), addontest.ReplicatedJob("y").Replicas(2)).Obj()},
		"unknown value": {
			js:       barrier("Pod").ReplicatedJobs(addontest.ReplicatedJob("x")).Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeNotSupported, barrierPath)},
		},
		"bad timeout": {
			js:       barrier("JobSet").Annotation(contract.StartBarrierTimeoutAnnotationKey, "0s").ReplicatedJobs(addontest.ReplicatedJob("x")).Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeInvalid, timeoutPath)},
		},
		"parallelism below completions": {
			js:       barrier("JobSet").ReplicatedJobs(addontest.ReplicatedJob("x").Parallelism(2).Completions(4)).Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeInvalid, "spec.replicatedJobs[0].template.spec.parallelism")},
		},
		"a container of the barrier's name": {
			js:       barrier("JobSet").ReplicatedJobs(addontest.ReplicatedJob("x").Containers(contract.StartBarrierContainerName)).Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeInvalid, podSpec0+".containers[0].name")},
		},
		"an init container of the barrier's name": {
			js:       barrier("JobSet").ReplicatedJobs(addontest.ReplicatedJob("x").InitContainers(contract.StartBarrierContainerName)).Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeInvalid, podSpec0+".initContainers[0].name")},
		},
		"a volume of the barrier's name": {
			js:       barrier("JobSet").ReplicatedJobs(addontest.ReplicatedJob("x").EmptyDir(contract.StartBarrierContainerName)).Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeInvalid, podSpec0+".volumes[0].name")},
		},
		"barrier-state in a pod template": {
			js: barrier("JobSet").ReplicatedJobs(addontest.ReplicatedJob("x").PodAnnotation(contract.StartBarrierStateAnnotationKey, "open")).Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeForbidden,
				"spec.replicatedJobs[0].template.spec.template.metadata.annotations[sequencer.jobset-addons.io/barrier-state]")},
		},
		"opened set by the user": {
			js:       barrier("JobSet").Annotation(contract.StartBarrierOpenedAnnotationKey, `{"restartAttempt":0,"groups":["jobset"]}`).ReplicatedJobs(addontest.ReplicatedJob("x")).Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeForbidden, openedPath)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.wantErrs, errsOf(admitted(t, tc.js))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBarrierInjected(t *testing.T) {
	js := addontest.JobSet("ns", "a").Annotation(contract.StartBarrierAnnotationKey, "JobSet").
		Annotation(contract.StartBarrierTimeoutAnnotationKey, "90s").
		ReplicatedJobs(addontest.ReplicatedJob("x").InitContainers("download")).Obj()
	if errs := admitted(t, js); len(errs) > 0 {
		t.Fatal(errs)
	}
	once := js.DeepCopy()
	if errs := admitted(t, js); len(errs) > 0 { // a re-admission changes nothing
		t.Fatal(errs)
	}
	if diff := cmp.Diff(once, js); diff != "" {
		t.Errorf("a second admission changed the JobSet (-first +second):\n%s", diff)
	}
	pt := js.Spec.ReplicatedJobs[0].Template.Spec.Template
	var names []string
	for _, c := range pt.Spec.InitContainers {
		names = append(names, c.Name)
	}
	if diff := cmp.Diff([]string{"download", contract.StartBarrierContainerName}, names); diff != "" {
		t.Errorf("init containers (-want +got):\n%s", diff)
	}
	b := pt.Spec.InitContainers[1]
	if b.Image != "example.com/barrier:v1" || !cmp.Equal(b.Args, []string{"--state-file=/var/run/jobset-addons/barrier/state", "--deadline=3m30s"}) {
		t.Errorf("barrier container %s %v", b.Image, b.Args)
	}
	want := corev1.DownwardAPIVolumeFile{Path: "state", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1",
		FieldPath: "metadata.annotations['sequencer.jobset-addons.io/barrier-state']"}}
	if v := pt.Spec.Volumes; len(v) != 1 || v[0].DownwardAPI == nil || !cmp.Equal(v[0].DownwardAPI.Items, []corev1.DownwardAPIVolumeFile{want}) {
		t.Errorf("volumes %+v", v)
	}
	if pt.Labels[contract.StartBarrierLabelKey] != contract.EnabledValue {
		t.Errorf("labels %v", pt.Labels)
	}
	if pt.Spec.AutomountServiceAccountToken != nil || pt.Spec.SchedulingGates != nil {
		t.Errorf("the user's pod spec was changed beyond the barrier: %+v", pt.Spec)
	}
}

func TestBarrierAnnotationsImmutable(t *testing.T) {
	old := addontest.JobSet("ns", "a").Annotation(contract.StartBarrierAnnotationKey, "JobSet").ReplicatedJobs(addontest.ReplicatedJob("x")).Obj()
	changed := old.DeepCopy()
	changed.Annotations[contract.StartBarrierAnnotationKey] = "Stage"
	changed.Annotations[contract.StartBarrierTimeoutAnnotationKey] = "1m"
	got := errsOf(ValidateUpdate(old, changed))
	if diff := cmp.Diff([]fieldErr{fe(field.ErrorTypeForbidden, barrierPath), fe(field.ErrorTypeForbidden, timeoutPath)}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
