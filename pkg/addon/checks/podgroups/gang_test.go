package podgroups

import (
	stdcmp "cmp"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

const (
	schedulerPath = "metadata.annotations[podgroups.jobset-addons.io/scheduler]"
	queuePath     = "metadata.annotations[scheduling.volcano.sh/queue-name]"
	topologyPath  = "metadata.annotations[podgroups.jobset-addons.io/network-topology]"
	timeoutPath   = "metadata.annotations[podgroups.jobset-addons.io/schedule-timeout-seconds]"
	inOrder       = "sequencer.jobset-addons.io/execution-policy"
)

func requests(cpu, memory string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}}
}

// withPodSpec is the ReplicatedJob w after edit of its pod spec.
func withPodSpec(w *addontest.ReplicatedJobWrapper, edit func(*corev1.PodSpec)) *addontest.ReplicatedJobWrapper {
	edit(w.PodSpec())
	return w
}

// errsOf is "Type Field" of each error.
func errsOf(list field.ErrorList) []string {
	var out []string
	for _, e := range list {
		out = append(out, string(e.Type)+" "+e.Field)
	}
	return out
}

func fe(t field.ErrorType, path string) string { return string(t) + " " + path }

// kv is a map of the keys and values.
func kv(kvs ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i < len(kvs); i += 2 {
		m[kvs[i]] = kvs[i+1]
	}
	return m
}

func TestParse(t *testing.T) {
	sched := func(s string, kvs ...string) map[string]string {
		return kv(append(kvs, contract.SchedulerAnnotationKey, s)...)
	}
	const queue, topology, timeout = contract.VolcanoQueueNameAnnotationKey, contract.NetworkTopologyAnnotationKey, contract.ScheduleTimeoutAnnotationKey
	volcano, cosched := Settings{Scheduler: contract.SchedulerVolcano}, Settings{Scheduler: contract.SchedulerCoscheduling}
	native := Settings{Scheduler: contract.SchedulerKubernetes}
	const key, keyPath = contract.TopologyKeyAnnotationKey, "metadata.annotations[podgroups.jobset-addons.io/topology-key]"
	cases := map[string]struct {
		annotations map[string]string
		want        Settings
		wantErrs    []string
	}{
		"volcano with queue and topology": {
			annotations: sched("volcano", queue, "research", topology, "{mode: soft, highestTierAllowed: 2}"),
			want:        Settings{Scheduler: contract.SchedulerVolcano, Queue: "research", NetworkTopology: &contract.NetworkTopology{Mode: contract.NetworkTopologySoft, HighestTierAllowed: ptr.To(2)}},
		},
		"topology mode defaults to hard (JSON)": {
			annotations: sched("volcano", topology, `{"highestTierAllowed": 1}`),
			want:        Settings{Scheduler: contract.SchedulerVolcano, NetworkTopology: &contract.NetworkTopology{Mode: contract.NetworkTopologyHard, HighestTierAllowed: ptr.To(1)}},
		},
		"coscheduling with a timeout": {
			annotations: sched("coscheduling", timeout, "90"),
			want:        Settings{Scheduler: contract.SchedulerCoscheduling, ScheduleTimeoutSeconds: ptr.To[int32](90)},
		},
		"kubernetes":                     {annotations: sched("kubernetes"), want: Settings{Scheduler: contract.SchedulerKubernetes}},
		"topology for kubernetes":        {annotations: sched("kubernetes", topology, "{mode: hard}"), want: native, wantErrs: []string{fe(field.ErrorTypeForbidden, topologyPath)}},
		"queue for kubernetes":           {annotations: sched("kubernetes", queue, "q"), want: native, wantErrs: []string{fe(field.ErrorTypeForbidden, queuePath)}},
		"timeout for kubernetes":         {annotations: sched("kubernetes", timeout, "9"), want: native, wantErrs: []string{fe(field.ErrorTypeForbidden, timeoutPath)}},
		"kubernetes with a topology key": {annotations: sched("kubernetes", key, "topology.kubernetes.io/zone"), want: Settings{Scheduler: contract.SchedulerKubernetes, TopologyKey: "topology.kubernetes.io/zone"}},
		"topology key not a label key":   {annotations: sched("kubernetes", key, "a/b/c"), want: native, wantErrs: []string{fe(field.ErrorTypeInvalid, keyPath)}},
		"topology key for volcano":       {annotations: sched("volcano", key, "rack"), want: volcano, wantErrs: []string{fe(field.ErrorTypeForbidden, keyPath)}},
		"unknown scheduler":              {annotations: sched("kube-batch"), wantErrs: []string{fe(field.ErrorTypeNotSupported, schedulerPath)}},
		"topology without scheduler":     {annotations: kv(topology, "{mode: hard}"), wantErrs: []string{fe(field.ErrorTypeRequired, schedulerPath)}},
		"queue for coscheduling":         {annotations: sched("coscheduling", queue, "q"), want: cosched, wantErrs: []string{fe(field.ErrorTypeForbidden, queuePath)}},
		"topology for coscheduling":      {annotations: sched("coscheduling", topology, "{mode: hard}"), want: cosched, wantErrs: []string{fe(field.ErrorTypeForbidden, topologyPath)}},
		"timeout for volcano":            {annotations: sched("volcano", timeout, "5"), want: volcano, wantErrs: []string{fe(field.ErrorTypeForbidden, timeoutPath)}},
		"timeout 0":                      {annotations: sched("coscheduling", timeout, "0"), want: cosched, wantErrs: []string{fe(field.ErrorTypeInvalid, timeoutPath)}},
		"timeout abc":                    {annotations: sched("coscheduling", timeout, "abc"), want: cosched, wantErrs: []string{fe(field.ErrorTypeInvalid, timeoutPath)}},
		"topology mode medium":           {annotations: sched("volcano", topology, "{mode: medium}"), want: volcano, wantErrs: []string{fe(field.ErrorTypeNotSupported, topologyPath+".mode")}},
		"topology highestTierAllowed 0":  {annotations: sched("volcano", topology, "{highestTierAllowed: 0}"), want: volcano, wantErrs: []string{fe(field.ErrorTypeInvalid, topologyPath+".highestTierAllowed")}},
		"topology unknown field":         {annotations: sched("volcano", topology, "{mode: hard, tier: 1}"), want: volcano, wantErrs: []string{fe(field.ErrorTypeNotSupported, topologyPath+".tier")}},
		"queue not a DNS subdomain":      {annotations: sched("volcano", queue, "Bad_Queue"), want: volcano, wantErrs: []string{fe(field.ErrorTypeInvalid, queuePath)}},
		"empty scheduler, every problem": {annotations: sched("", timeout, "x", queue, "Bad_Queue"), wantErrs: []string{fe(field.ErrorTypeRequired, schedulerPath), fe(field.ErrorTypeInvalid, queuePath), fe(field.ErrorTypeInvalid, timeoutPath)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, errs := Parse(addontest.JobSet("ns", "js").Annotations(tc.annotations).Obj())
			if diff := cmp.Diff(tc.wantErrs, errsOf(errs)); diff != "" {
				t.Fatalf("errors (-want +got):\n%s\n%v", diff, errs)
			}
			if len(tc.wantErrs) == 0 {
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("settings (-want +got):\n%s", diff)
				}
			} else if got.Scheduler != tc.want.Scheduler { // the webhook goes on with it
				t.Errorf("scheduler %q, want %q", got.Scheduler, tc.want.Scheduler)
			}
		})
	}
}

// summary is what a test checks of a Gang; resources are canonical strings.
type summary struct {
	Name           string
	Stage          int
	ReplicatedJobs []string
	Sequenced      bool
	MinMember      int32
	MinResources   map[corev1.ResourceName]string
	PriorityClass  []string
}

func summarize(gangs []Gang) []summary {
	var out []summary
	for _, g := range gangs {
		res := map[corev1.ResourceName]string{}
		for n, q := range g.MinResources {
			if n == corev1.ResourceMemory {
				res[n] = resource.NewQuantity(q.Value(), resource.BinarySI).String()
			} else {
				res[n] = resource.NewMilliQuantity(q.MilliValue(), resource.DecimalSI).String()
			}
		}
		out = append(out, summary{g.Name, g.Stage.Index, g.Stage.ReplicatedJobs, g.Sequenced, g.MinMember, res, g.PriorityClassNames})
	}
	return out
}

func res(cpu, memory string) map[corev1.ResourceName]string {
	return map[corev1.ResourceName]string{corev1.ResourceCPU: cpu, corev1.ResourceMemory: memory}
}

func TestGangs(t *testing.T) {
	volcano := map[string]string{contract.SchedulerAnnotationKey: "volcano"}
	sequenced := map[string]string{contract.SchedulerAnnotationKey: "volcano", inOrder: "InOrder"}
	single := func(r *addontest.ReplicatedJobWrapper) *jobsetv1alpha2.JobSet {
		return addontest.JobSet("ns", "train").Annotations(volcano).ReplicatedJobs(r).Obj()
	}
	one := func(members int32, r map[corev1.ResourceName]string) []summary {
		return []summary{{Name: "train", ReplicatedJobs: []string{"a"}, MinMember: members, MinResources: r, PriorityClass: []string{""}}}
	}
	sidecar := func(name, cpu, memory string) corev1.Container {
		return corev1.Container{Name: name, RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Resources: requests(cpu, memory)}
	}
	long := strings.Repeat("n", 56)                       // long-stage-1 is 64 characters
	eleven := make([]*addontest.ReplicatedJobWrapper, 11) // stages 0 to 10
	for i := range eleven {
		eleven[i] = addontest.ReplicatedJob(fmt.Sprint("r", i)).Requests("1", "1Gi")
	}
	twoStages := func(name string) []summary {
		return []summary{
			{Name: name + "-stage-0", ReplicatedJobs: []string{"a"}, Sequenced: true, MinMember: 1, MinResources: res("1", "1Gi"), PriorityClass: []string{""}},
			{Name: name + "-stage-1", Stage: 1, ReplicatedJobs: []string{"b"}, Sequenced: true, MinMember: 1, MinResources: res("1", "1Gi"), PriorityClass: []string{""}},
		}
	}
	stages := func(n int) []summary {
		var out []summary
		for i := range n {
			out = append(out, summary{Name: fmt.Sprint("train-stage-", i), Stage: i, ReplicatedJobs: []string{fmt.Sprint("r", i)}, Sequenced: true,
				MinMember: 1, MinResources: res("1", "1Gi"), PriorityClass: []string{""}})
		}
		return out
	}
	cases := map[string]struct {
		js        *jobsetv1alpha2.JobSet
		scheduler contract.Scheduler
		want      []summary
		wantErrs  []string
	}{
		"parallelism unset counts 1":          {js: single(addontest.ReplicatedJob("a").Replicas(3).Requests("500m", "1Gi")), want: one(3, res("1500m", "3Gi"))},
		"completions below parallelism":       {js: single(addontest.ReplicatedJob("a").Replicas(2).Parallelism(4).Completions(3).Requests("250m", "512Mi")), want: one(6, res("1500m", "3Gi"))},
		"completions unset means parallelism": {js: single(addontest.ReplicatedJob("a").Parallelism(3).Requests("500m", "1Gi")), want: one(3, res("1500m", "3Gi"))},
		"completions above parallelism":       {js: single(addontest.ReplicatedJob("a").Parallelism(2).Completions(5).Requests("750m", "1536Mi")), want: one(2, res("1500m", "3Gi"))},
		"summed over ReplicatedJobs, priority classes in spec order": {
			js: addontest.JobSet("ns", "train").Annotations(volcano).ReplicatedJobs(
				addontest.ReplicatedJob("a").Requests("1", "1Gi").PriorityClass("high"),
				addontest.ReplicatedJob("b").Replicas(2).Requests("250m", "1Gi"),
				addontest.ReplicatedJob("c").Parallelism(0).Requests("8", "8Gi").PriorityClass("high"),
			).Obj(),
			want: []summary{{Name: "train", ReplicatedJobs: []string{"a", "b", "c"}, MinMember: 3, MinResources: res("1500m", "3Gi"), PriorityClass: []string{"high", ""}}},
		},
		// Per pod: containers 500m+250m, 1Gi+512Mi; init container 1, 256Mi; so max = 1, 1536Mi;
		// plus overhead 250m, 512Mi = 1250m, 2Gi. Two pods.
		"largest init container and overhead": {
			js: single(withPodSpec(addontest.ReplicatedJob("a").Replicas(2).Requests("500m", "1Gi"), func(p *corev1.PodSpec) {
				p.Containers = append(p.Containers, corev1.Container{Name: "second", Resources: requests("250m", "512Mi")})
				p.InitContainers = []corev1.Container{{Name: "small", Resources: requests("100m", "128Mi")}, {Name: "init", Resources: requests("1", "256Mi")}}
				p.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("512Mi")}
			})),
			want: one(2, res("2500m", "4Gi")),
		},
		// Per pod: container 500m, 1Gi plus sidecar 250m, 512Mi = 750m, 1536Mi. Two pods.
		"sidecar adds to the containers": {
			js: single(withPodSpec(addontest.ReplicatedJob("a").Replicas(2).Requests("500m", "1Gi"), func(p *corev1.PodSpec) {
				p.InitContainers = []corev1.Container{sidecar("proxy", "250m", "512Mi")}
			})),
			want: one(2, res("1500m", "3Gi")),
		},
		// Per pod: containers and sidecar 750m, 1536Mi; the init container after the sidecar runs
		// beside it: 1+250m, 256Mi+512Mi; max = 1250m, 1536Mi. Two pods.
		"init container after a sidecar counts the sidecar": {
			js: single(withPodSpec(addontest.ReplicatedJob("a").Replicas(2).Requests("500m", "1Gi"), func(p *corev1.PodSpec) {
				p.InitContainers = []corev1.Container{sidecar("proxy", "250m", "512Mi"), {Name: "init", Resources: requests("1", "256Mi")}}
			})),
			want: one(2, res("2500m", "3Gi")),
		},
		"sequenced: a gang per stage": {
			js: addontest.JobSet("ns", "train").Annotations(sequenced).ReplicatedJobs(
				addontest.ReplicatedJob("a").Replicas(2).Requests("500m", "1Gi"),
				addontest.ReplicatedJob("b").Parallelism(3).Completions(2).Requests("250m", "512Mi").PriorityClass("low"),
			).Obj(),
			want: []summary{
				{Name: "train-stage-0", Stage: 0, ReplicatedJobs: []string{"a"}, Sequenced: true, MinMember: 2, MinResources: res("1", "2Gi"), PriorityClass: []string{""}},
				{Name: "train-stage-1", Stage: 1, ReplicatedJobs: []string{"b"}, Sequenced: true, MinMember: 2, MinResources: res("500m", "1Gi"), PriorityClass: []string{"low"}},
			},
		},
		"no ReplicatedJobs": {js: addontest.JobSet("ns", "train").Annotations(volcano).Obj()},
		"stages that cannot be computed": {
			js:       addontest.JobSet("ns", "train").Annotate(inOrder, "Sequential").ReplicatedJobs(addontest.ReplicatedJob("a").Requests("1", "1Gi")).Obj(),
			wantErrs: []string{fe(field.ErrorTypeNotSupported, "metadata.annotations["+inOrder+"]")},
		},
		"coscheduling: stage name of 63 characters": {js: addontest.JobSet("ns", long[1:]).Annotations(sequenced).ReplicatedJobs(
			addontest.ReplicatedJob("a").Requests("1", "1Gi"),
			addontest.ReplicatedJob("b").Requests("1", "1Gi"),
		).Obj(), scheduler: contract.SchedulerCoscheduling, want: twoStages(long[1:])},
		"volcano: the long name is fine (an annotation)": {js: addontest.JobSet("ns", long).Annotations(sequenced).ReplicatedJobs(
			addontest.ReplicatedJob("a").Requests("1", "1Gi"),
			addontest.ReplicatedJob("b").Requests("1", "1Gi"),
		).Obj(), want: twoStages(long)},
		"kubernetes: 8 stages, a Workload's most templates": {js: addontest.JobSet("ns", "train").Annotations(sequenced).ReplicatedJobs(eleven[:8]...).Obj(), scheduler: contract.SchedulerKubernetes, want: stages(8)},
		"volcano: 11 stages": {js: addontest.JobSet("ns", "train").Annotations(sequenced).ReplicatedJobs(eleven...).Obj(), want: stages(11)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gangs, errs := Gangs(tc.js, Settings{Scheduler: stdcmp.Or(tc.scheduler, contract.SchedulerVolcano)})
			if diff := cmp.Diff(tc.wantErrs, errsOf(errs)); diff != "" {
				t.Fatalf("errors (-want +got):\n%s\n%v", diff, errs)
			}
			if diff := cmp.Diff(tc.want, summarize(gangs)); diff != "" {
				t.Errorf("gangs (-want +got):\n%s", diff)
			}
		})
	}
}

type classes map[string]int32

func (c classes) PriorityClassValue(name string) (int32, bool) {
	v, ok := c[name]
	return v, ok
}

func TestPriorityClass(t *testing.T) {
	known := classes{"high": 1000, "low": 10, "negative": -5}
	cases := map[string]struct {
		classes []string
		want    string
		warning []string // what the warning must mention; none: no warning
	}{
		"one class":               {[]string{"low"}, "low", nil},
		"no class":                {[]string{""}, "", nil},
		"highest wins":            {[]string{"low", "high"}, "high", []string{`"low"`, `"high"`, "(1000)"}},
		"highest wins, any order": {[]string{"high", "low"}, "high", []string{`"low"`, `"high"`, "(1000)"}},
		"unknown counts as 0":     {[]string{"unknown", "low"}, "low", []string{`"unknown"`, `"low"`, "(10)"}},
		"unknown beats negative":  {[]string{"negative", "unknown"}, "unknown", []string{`"negative"`, `"unknown"`, "(0)"}},
		"none beats negative":     {[]string{"", "negative"}, "", []string{`""`, `"negative"`, "(0)"}},
	}
	for name, tc := range cases {
		got, warning := Gang{Name: "train", PriorityClassNames: tc.classes}.PriorityClass(known)
		if got != tc.want {
			t.Errorf("%s: class %q, want %q", name, got, tc.want)
		}
		if (warning != "") != (tc.warning != nil) {
			t.Errorf("%s: warning %q, want one: %t", name, warning, tc.warning != nil)
		}
		for _, s := range tc.warning {
			if !strings.Contains(warning, s) {
				t.Errorf("%s: warning %q does not mention %s", name, warning, s)
			}
		}
	}
}

func TestTrainJobOwner(t *testing.T) {
	w := addontest.JobSet("ns", "train")
	js := w.Obj()
	if got := TrainJobOwner(js); got != "" {
		t.Errorf("no owner: got %q", got)
	}
	w.OwnedByTrainJob("tj")
	if got := TrainJobOwner(js); got != "tj" {
		t.Errorf("TrainJob owner: got %q", got)
	}
	js.OwnerReferences[0].Controller = ptr.To(false)
	if got := TrainJobOwner(js); got != "" {
		t.Errorf("a TrainJob that is not the controller: got %q", got)
	}
	js.OwnerReferences[0].Controller = ptr.To(true)
	js.OwnerReferences[0].APIVersion = "example.com/v1"
	if got := TrainJobOwner(js); got != "" {
		t.Errorf("a TrainJob of another group: got %q", got)
	}
}
