package backend

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/schedulingv1/workloadbuilder"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// twoStages is a JobSet of ReplicatedJobs init and main, two Jobs each.
func twoStages(annotations map[string]string) *jobsetv1alpha2.JobSet {
	return addontest.JobSet("ns", "js").UID("uid").Annotations(annotations).
		ReplicatedJobs(addontest.ReplicatedJob("init").Replicas(2), addontest.ReplicatedJob("main").Replicas(2)).Obj()
}

func nativeJobSet(t *testing.T, sequenced bool) (*jobsetv1alpha2.JobSet, []podgroups.Gang) {
	a := map[string]string{contract.SchedulerAnnotationKey: "kubernetes"}
	if sequenced {
		a[contract.ExecutionPolicyAnnotationKey] = "InOrder"
	}
	js := twoStages(a)
	js.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec.PriorityClassName = "high"
	_, gangs := read(t, js)
	return js, gangs
}

func gangMinCount(n int32) schedulingv1beta1.PodGroupSchedulingPolicy {
	return schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: n}}
}

// TestNativeWorkload: one template per gang, named stage-<i>, with the gang's pods as minCount
// and its priority class; the JobSet as controllerRef and controller owner; our labels.
func TestNativeWorkload(t *testing.T) {
	js, gangs := nativeJobSet(t, true)
	wl, err := Kubernetes{}.BuildWorkload(js, gangs, podgroups.Settings{}, func(g podgroups.Gang) string { return g.PriorityClassNames[0] })
	if err != nil {
		t.Fatal(err)
	}
	want := []schedulingv1beta1.PodGroupTemplate{
		{Name: "stage-0", SchedulingPolicy: gangMinCount(2)},
		{Name: "stage-1", SchedulingPolicy: gangMinCount(2), PriorityClassName: "high"},
	}
	if diff := cmp.Diff(want, wl.Spec.PodGroupTemplates); diff != "" {
		t.Errorf("templates (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&schedulingv1beta1.TypedLocalObjectReference{APIGroup: "jobset.x-k8s.io", Kind: "JobSet", Name: "js"}, wl.Spec.ControllerRef); diff != "" {
		t.Errorf("controllerRef (-want +got):\n%s", diff)
	}
	if wl.Name != "js" || wl.Namespace != "ns" || !Ours(wl, js) || wl.Labels[contract.JobSetNameLabelKey] != "js" {
		t.Errorf("Workload %s/%s labels %v owners %v: want js/ns, ours", wl.Namespace, wl.Name, wl.Labels, wl.OwnerReferences)
	}
	if wl.Annotations[contract.PodGroupSpecHashAnnotationKey] == "" {
		t.Error("no spec hash")
	}
	// The hash follows minCount.
	js.Spec.ReplicatedJobs[0].Template.Spec.Parallelism = ptr.To[int32](3)
	bigger, _ := podgroups.Gangs(js, podgroups.Settings{Scheduler: contract.SchedulerKubernetes})
	wl2, err := Kubernetes{}.BuildWorkload(js, bigger, podgroups.Settings{}, func(podgroups.Gang) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if wl2.Annotations[contract.PodGroupSpecHashAnnotationKey] == wl.Annotations[contract.PodGroupSpecHashAnnotationKey] {
		t.Error("the hash did not change with minCount")
	}
}

// TestNativePodGroup: the PodGroup of each gang refers to its template of the Workload, with the
// gang's minCount and priority class, our labels (the stage when sequenced) and the JobSet as
// controller.
func TestNativePodGroup(t *testing.T) {
	b := Kubernetes{}
	for _, sequenced := range []bool{false, true} {
		js, gangs := nativeJobSet(t, sequenced)
		g := gangs[len(gangs)-1]
		pg := b.Build(js, g, podgroups.Settings{Scheduler: contract.SchedulerKubernetes}, "high", "ignored").(*schedulingv1beta1.PodGroup)
		template := "stage-0"
		var minCount int32 = 4
		if sequenced {
			template, minCount = "stage-1", 2
		}
		want := schedulingv1beta1.PodGroupSpec{
			WorkloadRef:       &schedulingv1beta1.WorkloadReference{WorkloadName: "js", TemplateName: template},
			SchedulingPolicy:  gangMinCount(minCount),
			PriorityClassName: "high",
		}
		if diff := cmp.Diff(want, pg.Spec); diff != "" {
			t.Errorf("sequenced %t: spec (-want +got):\n%s", sequenced, diff)
		}
		if pg.Name != g.Name || !Ours(pg, js) || (pg.Labels[contract.PodGroupStageLabelKey] != "") != sequenced {
			t.Errorf("sequenced %t: PodGroup %s labels %v owners %v", sequenced, pg.Name, pg.Labels, pg.OwnerReferences)
		}
	}
}

// TestNativeAdopt: an update changes minCount and our labels and hash only, never what the API
// keeps immutable or what the apiserver's priority admission wrote.
func TestNativeAdopt(t *testing.T) {
	b := Kubernetes{}
	js, gangs := nativeJobSet(t, false)
	want := b.Build(js, gangs[0], podgroups.Settings{}, "new-class", "").(*schedulingv1beta1.PodGroup)
	have := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"theirs": "kept"}, Annotations: map[string]string{contract.PodGroupSpecHashAnnotationKey: "old"}},
		Spec: schedulingv1beta1.PodGroupSpec{
			WorkloadRef:       &schedulingv1beta1.WorkloadReference{WorkloadName: "js", TemplateName: "stage-0"},
			SchedulingPolicy:  gangMinCount(9),
			PriorityClassName: "old-class",
			Priority:          ptr.To[int32](1000),
		},
	}
	b.Adopt(have, want)
	wantSpec := have.Spec.DeepCopy()
	wantSpec.SchedulingPolicy.Gang.MinCount = 4
	if diff := cmp.Diff(*wantSpec, have.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	if have.Labels["theirs"] != "kept" || have.Labels[contract.ManagedByLabelKey] == "" || have.Annotations[contract.PodGroupSpecHashAnnotationKey] == "old" {
		t.Errorf("labels %v annotations %v", have.Labels, have.Annotations)
	}

	wl, err := Kubernetes{}.BuildWorkload(js, gangs, podgroups.Settings{}, func(podgroups.Gang) string { return "new-class" })
	if err != nil {
		t.Fatal(err)
	}
	haveWL := &schedulingv1beta1.Workload{Spec: schedulingv1beta1.WorkloadSpec{PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{
		{Name: "stage-0", SchedulingPolicy: gangMinCount(1), PriorityClassName: "old-class"},
	}}}
	b.AdoptWorkload(haveWL, wl)
	if diff := cmp.Diff([]schedulingv1beta1.PodGroupTemplate{{Name: "stage-0", SchedulingPolicy: gangMinCount(4), PriorityClassName: "old-class"}}, haveWL.Spec.PodGroupTemplates); diff != "" {
		t.Errorf("Workload templates (-want +got):\n%s", diff)
	}
}

// TestNativeBuilderValidates: what podgroups asks of workloadbuilder passes its own validation
// (a gang policy, allowed; no disruption mode), and a gang of no pods still gets minCount 1,
// the API's minimum.
func TestNativeBuilderValidates(t *testing.T) {
	js, gangs := nativeJobSet(t, true)
	for _, g := range gangs {
		b, _, err := gangBuilder(js, g, "", "high")
		if err != nil {
			t.Fatal(err)
		}
		if errs := b.Validate(context.Background(), workloadbuilder.ValidationInput{}); len(errs) > 0 {
			t.Errorf("%s: %v", g.Name, errs)
		}
	}
	empty := gangs[0]
	empty.MinMember = 0
	if got := podGroupSpec(js, empty, "", "").SchedulingPolicy.Gang.MinCount; got != 1 {
		t.Errorf("minCount of a gang of no pods = %d, want 1", got)
	}
}

// TestNativeTopologyKey: the topology key goes into every template of the Workload and into
// each PodGroup as its one scheduling constraint, and a PodGroup that comes back without it (an
// apiserver without TopologyAwareWorkloadScheduling) is told.
func TestNativeTopologyKey(t *testing.T) {
	b := Kubernetes{}
	js, gangs := nativeJobSet(t, true)
	s := podgroups.Settings{Scheduler: contract.SchedulerKubernetes, TopologyKey: "example.com/rack"}
	want := &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: "example.com/rack"}}}
	wl, err := Kubernetes{}.BuildWorkload(js, gangs, s, func(podgroups.Gang) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range wl.Spec.PodGroupTemplates {
		if diff := cmp.Diff(want, tp.SchedulingConstraints); diff != "" {
			t.Errorf("template %s constraints (-want +got):\n%s", tp.Name, diff)
		}
	}
	pg := b.Build(js, gangs[1], s, "", "").(*schedulingv1beta1.PodGroup)
	if diff := cmp.Diff(want, pg.Spec.SchedulingConstraints); diff != "" {
		t.Errorf("PodGroup constraints (-want +got):\n%s", diff)
	}
	if why := b.Dropped(s, gangs[1], pg).Topology; why != "" {
		t.Errorf("kept constraints told as dropped: %s", why)
	}
	pg.Spec.SchedulingConstraints = nil
	if why := b.Dropped(s, gangs[1], pg).Topology; why == "" {
		t.Error("dropped constraints not told")
	}
	if why := b.Dropped(podgroups.Settings{Scheduler: contract.SchedulerKubernetes}, gangs[1], pg).Topology; why != "" {
		t.Errorf("no key asked for, yet told: %s", why)
	}
}

// TestNativeClaims: a gang that is one Job (replicas 1, alone in its stage) gets its per-Job
// claims on its PodGroup, named as the resourceclaims Job webhook names them in the pods
// (<job>-<template>, <job>-r<N>-<template> in restart attempt N); a gang of two Jobs gets none;
// a PodGroup listing the claims of another attempt is to be made again; one whose claims the
// apiserver dropped is told.
func TestNativeClaims(t *testing.T) {
	templates := `[{metadata: {name: data}, spec: {}}, {metadata: {name: imex}, spec: {}}]`
	js := twoStages(map[string]string{contract.SchedulerAnnotationKey: "kubernetes", contract.ExecutionPolicyAnnotationKey: "InOrder"})
	js.Spec.ReplicatedJobs[1].Replicas = 1
	for i := range js.Spec.ReplicatedJobs {
		js.Spec.ReplicatedJobs[i].Template.Annotations = map[string]string{contract.TemplatesAnnotationKey: templates}
	}
	_, gangs := read(t, js)
	b := Kubernetes{}
	build := func(g podgroups.Gang) *schedulingv1beta1.PodGroup {
		return b.Build(js, g, podgroups.Settings{Scheduler: contract.SchedulerKubernetes}, "", "").(*schedulingv1beta1.PodGroup)
	}
	if got := build(gangs[0]).Spec.ResourceClaims; got != nil {
		t.Errorf("stage 0 (2 Jobs): claims %+v, want none", got)
	}
	first := build(gangs[1])
	want := []schedulingv1beta1.PodGroupResourceClaim{
		{Name: "data", ResourceClaimName: ptr.To("js-main-0-data")},
		{Name: "imex", ResourceClaimName: ptr.To("js-main-0-imex")},
	}
	if diff := cmp.Diff(want, first.Spec.ResourceClaims); diff != "" {
		t.Errorf("stage 1 (one Job) claims (-want +got):\n%s", diff)
	}
	if b.NeedsReplace(first, build(gangs[1])) {
		t.Error("claims changed between two builds of the same attempt")
	}
	js.Status.Restarts = 1
	restarted := build(gangs[1])
	if got := restarted.Spec.ResourceClaims; len(got) != 2 || *got[0].ResourceClaimName != "js-main-0-r1-data" {
		t.Errorf("restart attempt 1: claims %+v, want js-main-0-r1-data first", got)
	}
	if !b.NeedsReplace(first, restarted) {
		t.Error("the claims of attempt 0 are not told apart from attempt 1's")
	}
	if first.Annotations[contract.PodGroupSpecHashAnnotationKey] == restarted.Annotations[contract.PodGroupSpecHashAnnotationKey] {
		t.Error("the spec hash does not follow the claims")
	}
	shadowed := js.DeepCopy()
	shadowed.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "imex", ResourceClaimName: ptr.To("users-imex")}}
	_, sg := read(t, shadowed)
	if got := b.Build(shadowed, sg[1], podgroups.Settings{Scheduler: contract.SchedulerKubernetes}, "", "").(*schedulingv1beta1.PodGroup).Spec.ResourceClaims; len(got) != 1 || got[0].Name != "data" {
		t.Errorf("with the pod template's own claim imex: claims %+v, want data alone", got)
	}
	dropped := restarted.DeepCopy()
	dropped.Spec.ResourceClaims = nil
	if msg := b.Dropped(podgroups.Settings{Scheduler: contract.SchedulerKubernetes}, gangs[1], dropped).Claims; msg == "" {
		t.Error("claims dropped by the apiserver not told")
	}
	if msg := b.Dropped(podgroups.Settings{Scheduler: contract.SchedulerKubernetes}, gangs[1], restarted).Claims; msg != "" {
		t.Errorf("claims kept, yet told: %s", msg)
	}
}

// TestNativeComposite: a composite gang's Workload has one composite template (gang of all its
// Jobs) with one PodGroup template per ReplicatedJob (gang of one Job's pods, the topology key);
// its CompositePodGroup asks minGroupCount = the Jobs; each Job's PodGroup refers to its
// ReplicatedJob's template, names the CompositePodGroup as parent and lists the Job's claims.
func TestNativeComposite(t *testing.T) {
	js := twoStages(map[string]string{contract.SchedulerAnnotationKey: "kubernetes", contract.CompositeAnnotationKey: "true"})
	js.Spec.ReplicatedJobs[1].Template.Spec.Parallelism = ptr.To[int32](3)
	js.Spec.ReplicatedJobs[1].Template.Annotations = map[string]string{contract.TemplatesAnnotationKey: `[{metadata: {name: data}, spec: {}}]`}
	_, gangs := read(t, js)
	if len(gangs) != 1 || len(gangs[0].Jobs) != 4 {
		t.Fatalf("gangs %+v: want one of 4 Jobs", gangs)
	}
	g := gangs[0]
	wl, err := Kubernetes{}.BuildWorkload(js, gangs, podgroups.Settings{TopologyKey: "rack"}, func(podgroups.Gang) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if len(wl.Spec.PodGroupTemplates) != 0 || len(wl.Spec.CompositePodGroupTemplates) != 1 {
		t.Fatalf("Workload spec %+v: want one composite template and no plain one", wl.Spec)
	}
	ct := wl.Spec.CompositePodGroupTemplates[0]
	if ct.Name != "stage-0" || ct.SchedulingPolicy.Gang == nil || ct.SchedulingPolicy.Gang.MinGroupCount != 4 || len(ct.PodGroupTemplates) != 2 {
		t.Fatalf("composite template %+v", ct)
	}
	rack := &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: "rack"}}}
	if pt := ct.PodGroupTemplates[1]; pt.Name != "main" || pt.SchedulingPolicy.Gang.MinCount != 3 || cmp.Diff(rack, pt.SchedulingConstraints) != "" {
		t.Errorf("PodGroup template main %+v: want gang minCount 3 and topology rack", pt)
	}
	cpg, err := Kubernetes{}.BuildComposite(js, g, podgroups.Settings{TopologyKey: "rack"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if cpg.Name != "js" || cpg.Spec.SchedulingPolicy.Gang == nil || cpg.Spec.SchedulingPolicy.Gang.MinGroupCount != 4 || !Ours(cpg, js) ||
		cpg.Spec.WorkloadRef == nil || cpg.Spec.WorkloadRef.TemplateName != "stage-0" {
		t.Errorf("CompositePodGroup %+v", cpg)
	}
	children := g.Children()
	pg := Kubernetes{}.Build(js, children[3], podgroups.Settings{Scheduler: contract.SchedulerKubernetes, TopologyKey: "rack", Composite: true}, "", "").(*schedulingv1beta1.PodGroup)
	want := schedulingv1beta1.PodGroupSpec{
		ParentCompositePodGroupName: ptr.To("js"),
		WorkloadRef:                 &schedulingv1beta1.WorkloadReference{WorkloadName: "js", TemplateName: "main"},
		SchedulingPolicy:            gangMinCount(3),
		SchedulingConstraints:       rack,
		ResourceClaims:              []schedulingv1beta1.PodGroupResourceClaim{{Name: "data", ResourceClaimName: ptr.To("js-main-1-data")}},
	}
	if pg.Name != "js-main-1" {
		t.Errorf("PodGroup name %s, want js-main-1", pg.Name)
	}
	if diff := cmp.Diff(want, pg.Spec); diff != "" {
		t.Errorf("Job PodGroup spec (-want +got):\n%s", diff)
	}
}

// TestCompositeInject: in a composite gang, Inject marks the Job templates for the Job webhook,
// and the JobSet is then admitted.
func TestCompositeInject(t *testing.T) {
	js := jobSet("train", kv(contract.SchedulerAnnotationKey, "kubernetes", contract.CompositeAnnotationKey, "true"), "a", "b").Obj()
	s, gangs := read(t, js)
	Inject(Kubernetes{}, js, s, gangs)
	for i := range js.Spec.ReplicatedJobs {
		if got := js.Spec.ReplicatedJobs[i].Template.Annotations[contract.PerJobPodGroupAnnotationKey]; got != "true" {
			t.Errorf("ReplicatedJob %d: per-job annotation %q", i, got)
		}
	}
	if !Admitted(Kubernetes{}, js, gangs) {
		t.Error("not admitted after Inject")
	}
}
