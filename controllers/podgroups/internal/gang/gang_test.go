package gang

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

var names = SchedulerNames{Volcano: "volcano", Coscheduling: "scheduler-plugins-scheduler"}

func jobSet(name string, annotations map[string]string, rjs ...jobsetv1alpha2.ReplicatedJob) *jobsetv1alpha2.JobSet {
	return &jobsetv1alpha2.JobSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Annotations: annotations},
		Spec:       jobsetv1alpha2.JobSetSpec{ReplicatedJobs: rjs},
	}
}

// rj is a ReplicatedJob whose pods request cpu and memory in one container.
func rj(name string, replicas int32, parallelism, completions *int32, cpu, memory string) jobsetv1alpha2.ReplicatedJob {
	return jobsetv1alpha2.ReplicatedJob{Name: name, Replicas: replicas, Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
		Parallelism: parallelism, Completions: completions,
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
			}},
		}}}},
	}}}
}

func paths(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}

func path(key string) string { return contract.JobSetAnnotationPath(key).String() }

func TestParse(t *testing.T) {
	cases := map[string]struct {
		annotations map[string]string
		want        Settings
		wantPaths   []string
	}{
		"volcano with queue and topology": {
			annotations: map[string]string{contract.SchedulerAnnotationKey: "volcano", contract.VolcanoQueueNameAnnotationKey: "research", contract.NetworkTopologyAnnotationKey: "{mode: soft, highestTierAllowed: 2}"},
			want:        Settings{Scheduler: contract.SchedulerVolcano, Queue: "research", NetworkTopology: &contract.NetworkTopology{Mode: contract.NetworkTopologySoft, HighestTierAllowed: ptr.To(2)}},
		},
		"coscheduling with a timeout": {
			annotations: map[string]string{contract.SchedulerAnnotationKey: "coscheduling", contract.ScheduleTimeoutAnnotationKey: "90"},
			want:        Settings{Scheduler: contract.SchedulerCoscheduling, ScheduleTimeoutSeconds: ptr.To[int32](90)},
		},
		"unknown scheduler":         {annotations: map[string]string{contract.SchedulerAnnotationKey: "kube-batch"}, wantPaths: []string{path(contract.SchedulerAnnotationKey)}},
		"topology, no scheduler":    {annotations: map[string]string{contract.NetworkTopologyAnnotationKey: "{}"}, wantPaths: []string{path(contract.SchedulerAnnotationKey)}},
		"queue for coscheduling":    {annotations: map[string]string{contract.SchedulerAnnotationKey: "coscheduling", contract.VolcanoQueueNameAnnotationKey: "q"}, wantPaths: []string{path(contract.VolcanoQueueNameAnnotationKey)}},
		"timeout for volcano":       {annotations: map[string]string{contract.SchedulerAnnotationKey: "volcano", contract.ScheduleTimeoutAnnotationKey: "5"}, wantPaths: []string{path(contract.ScheduleTimeoutAnnotationKey)}},
		"timeout zero":              {annotations: map[string]string{contract.SchedulerAnnotationKey: "coscheduling", contract.ScheduleTimeoutAnnotationKey: "0"}, wantPaths: []string{path(contract.ScheduleTimeoutAnnotationKey)}},
		"queue not a DNS name":      {annotations: map[string]string{contract.SchedulerAnnotationKey: "volcano", contract.VolcanoQueueNameAnnotationKey: "Bad_Queue"}, wantPaths: []string{path(contract.VolcanoQueueNameAnnotationKey)}},
		"topology mode and tier":    {annotations: map[string]string{contract.SchedulerAnnotationKey: "volcano", contract.NetworkTopologyAnnotationKey: "{mode: medium, highestTierAllowed: 0}"}, wantPaths: []string{path(contract.NetworkTopologyAnnotationKey) + ".mode", path(contract.NetworkTopologyAnnotationKey) + ".highestTierAllowed"}},
		"topology unknown field":    {annotations: map[string]string{contract.SchedulerAnnotationKey: "volcano", contract.NetworkTopologyAnnotationKey: "{tier: 1}"}, wantPaths: []string{path(contract.NetworkTopologyAnnotationKey) + ".tier"}},
		"scheduler and timeout bad": {annotations: map[string]string{contract.SchedulerAnnotationKey: "", contract.ScheduleTimeoutAnnotationKey: "x"}, wantPaths: []string{path(contract.SchedulerAnnotationKey), path(contract.ScheduleTimeoutAnnotationKey)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, errs := Parse(jobSet("js", tc.annotations))
			if diff := cmp.Diff(tc.wantPaths, paths(errs)); diff != "" {
				t.Fatalf("error paths (-want +got):\n%s\n%v", diff, errs)
			}
			if len(tc.wantPaths) == 0 {
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("settings (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestGangs(t *testing.T) {
	// a: 2 Jobs x min(3, 2) = 4 pods; b: 1 Job x parallelism unset (1) = 1 pod; c: 3 Jobs x
	// parallelism 2, completions unset = 6 pods.
	a := rj("a", 2, ptr.To[int32](3), ptr.To[int32](2), "500m", "1Gi")
	b := rj("b", 1, nil, nil, "2", "3Gi")
	c := rj("c", 3, ptr.To[int32](2), nil, "250m", "256Mi")
	// a's pods also have an init container bigger than their container (cpu 1 counts, not
	// 500m), a sidecar (restartable init container, adds 100m and 64Mi), and overhead.
	spec := &a.Template.Spec.Template.Spec
	spec.InitContainers = []corev1.Container{
		{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}},
		{Name: "sidecar", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}},
	}
	spec.Overhead = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")}
	// Per pod of a: cpu max(500m+100m, 1+... ) -> the scheduler's rule: max(sum of containers and
	// sidecars = 600m, init 1 + sidecars started before it = 1) = 1; memory 1Gi+64Mi+32Mi.

	t.Run("one gang", func(t *testing.T) {
		gangs, errs := Gangs(jobSet("train", map[string]string{contract.SchedulerAnnotationKey: "volcano"}, a, b, c), contract.SchedulerVolcano)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		if len(gangs) != 1 || gangs[0].Name != "train" || gangs[0].Sequenced {
			t.Fatalf("gangs %+v: want one, named train", gangs)
		}
		g := gangs[0]
		if g.MinMember != 4+1+6 {
			t.Errorf("minMember %d, want 11", g.MinMember)
		}
		// cpu: 4 x 1 + 1 x 2 + 6 x 250m = 7.5; memory: 4 x (1Gi+96Mi) + 3Gi + 6 x 256Mi.
		want := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7500m"), corev1.ResourceMemory: resource.MustParse(mib(4*(1024+96) + 3*1024 + 6*256))}
		for res, q := range want {
			if got := g.MinResources[res]; got.Cmp(q) != 0 {
				t.Errorf("minResources[%s] = %s, want %s", res, got.String(), q.String())
			}
		}
	})

	t.Run("a gang per stage", func(t *testing.T) {
		js := jobSet("train", map[string]string{contract.SchedulerAnnotationKey: "coscheduling", contract.ExecutionPolicyAnnotationKey: "InOrder"}, b, c)
		gangs, errs := Gangs(js, contract.SchedulerCoscheduling)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		var got []string
		for _, g := range gangs {
			got = append(got, g.Name+"="+strings.Join(g.Stage.ReplicatedJobs, ","))
			if !g.Sequenced {
				t.Errorf("gang %s not Sequenced", g.Name)
			}
		}
		if diff := cmp.Diff([]string{"train-stage-0=b", "train-stage-1=c"}, got); diff != "" {
			t.Errorf("gangs (-want +got):\n%s", diff)
		}
		if gangs[0].MinMember != 1 || gangs[1].MinMember != 6 {
			t.Errorf("minMember %d, %d: want 1, 6", gangs[0].MinMember, gangs[1].MinMember)
		}
	})

	t.Run("stage name too long for coscheduling's label", func(t *testing.T) {
		long := strings.Repeat("n", 57)
		ann := map[string]string{contract.ExecutionPolicyAnnotationKey: "InOrder"}
		if _, errs := Gangs(jobSet(long, ann, b, c), contract.SchedulerCoscheduling); len(errs) != 1 || errs[0].Field != "metadata.name" {
			t.Errorf("coscheduling: errors %v, want one at metadata.name", errs)
		}
		if _, errs := Gangs(jobSet(long, ann, b, c), contract.SchedulerVolcano); len(errs) > 0 {
			t.Errorf("volcano (an annotation, 253 characters): errors %v", errs)
		}
	})
}

func mib(n int) string { return resource.NewQuantity(int64(n)*1024*1024, resource.BinarySI).String() }

func TestInject(t *testing.T) {
	for _, s := range []Settings{{Scheduler: contract.SchedulerVolcano, Queue: "research"}, {Scheduler: contract.SchedulerVolcano}, {Scheduler: contract.SchedulerCoscheduling}} {
		t.Run(string(s.Scheduler)+"/"+s.Queue, func(t *testing.T) {
			js := jobSet("train", map[string]string{contract.ExecutionPolicyAnnotationKey: "InOrder"},
				rj("a", 1, nil, nil, "1", "1Gi"), rj("b", 1, nil, nil, "1", "1Gi"))
			js.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec.SchedulerName = names.For(s.Scheduler)
			gangs, errs := Gangs(js, s.Scheduler)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if Admitted(js, s, gangs) {
				t.Fatal("Admitted before Inject")
			}
			Inject(js, s, gangs, names)
			once := js.DeepCopy()
			Inject(js, s, gangs, names)
			if diff := cmp.Diff(once, js); diff != "" {
				t.Errorf("Inject is not idempotent (-once +twice):\n%s", diff)
			}
			if !Admitted(js, s, gangs) {
				t.Error("not Admitted after Inject")
			}
			for i, want := range []string{"train-stage-0", "train-stage-1"} {
				pt := js.Spec.ReplicatedJobs[i].Template.Spec.Template
				got := pt.Labels[contract.CoschedulingPodGroupLabelKey]
				if s.Scheduler == contract.SchedulerVolcano {
					got = pt.Annotations[contract.VolcanoGroupNameAnnotationKey]
					if q, ok := pt.Annotations[contract.VolcanoQueueNameAnnotationKey]; q != s.Queue || ok != (s.Queue != "") {
						t.Errorf("template %d queue annotation %q (set %t), want %q", i, q, ok, s.Queue)
					}
				}
				if got != want {
					t.Errorf("template %d names gang %q, want %q", i, got, want)
				}
				if pt.Spec.SchedulerName != names.For(s.Scheduler) {
					t.Errorf("template %d schedulerName %q", i, pt.Spec.SchedulerName)
				}
			}
			// A template whose gang name was changed is not admitted.
			js.Spec.ReplicatedJobs[1].Template.Spec.Template.Annotations = nil
			js.Spec.ReplicatedJobs[1].Template.Spec.Template.Labels = nil
			if Admitted(js, s, gangs) {
				t.Error("Admitted with a template naming no gang")
			}
		})
	}
}

func TestSchedulerNameErrors(t *testing.T) {
	js := jobSet("train", nil, rj("a", 1, nil, nil, "1", "1Gi"), rj("b", 1, nil, nil, "1", "1Gi"))
	js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.SchedulerName = "volcano"
	js.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec.SchedulerName = "default-scheduler"
	errs := SchedulerNameErrors(js, Settings{Scheduler: contract.SchedulerVolcano}, names)
	if diff := cmp.Diff([]string{"spec.replicatedJobs[1].template.spec.template.spec.schedulerName"}, paths(errs)); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
}

type classes map[string]int32

func (c classes) PriorityClassValue(name string) (int32, bool) {
	v, ok := c[name]
	return v, ok
}

func TestPriorityClass(t *testing.T) {
	known := classes{"high": 1000, "low": 10, "negative": -5}
	for _, tc := range []struct {
		names       []string
		want        string
		wantWarning bool
	}{
		{[]string{"low"}, "low", false},
		{[]string{"low", "high"}, "high", true},
		{[]string{"unknown", "low"}, "low", true},
		{[]string{"", "negative"}, "", true},
		{[]string{""}, "", false},
	} {
		got, warning := Gang{Name: "g", PriorityClassNames: tc.names}.PriorityClass(known)
		if got != tc.want || (warning != "") != tc.wantWarning {
			t.Errorf("%q: got %q (warning %q), want %q (warning %t)", tc.names, got, warning, tc.want, tc.wantWarning)
		}
		for _, n := range tc.names {
			if tc.wantWarning && n != "" && !strings.Contains(warning, n) {
				t.Errorf("%q: warning %q does not name %q", tc.names, warning, n)
			}
		}
	}
}
