package kueue_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	coschedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Kueue's keys (sigs.k8s.io/kueue v0.17.0), written here rather than imported: Kueue's module
// is built on another Kubernetes than this one.
const (
	queueNameLabel     = "kueue.x-k8s.io/queue-name"
	priorityClassLabel = "kueue.x-k8s.io/priority-class"
	topologyGate       = "kueue.x-k8s.io/topology"
	// podsetRequiredTopology asks Kueue to put all pods of a pod set in one domain of a level.
	podsetRequiredTopology = "kueue.x-k8s.io/podset-required-topology"
)

// deviceClass is the suite's DRA class: network-attached devices, enough for every claim.
const deviceClass = "kueue.testbed.jobset-addons.io"

func kueueObject(kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: kind})
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// queues is a ResourceFlavor, a ClusterQueue of it and a LocalQueue in the test's namespace, all
// named after the namespace.
type queues struct {
	flavor, clusterQueue, localQueue string
}

// queueOptions shape the ClusterQueue: its CPU quota, whether a workload of a higher priority
// preempts a lower one in it, and the flavor's Topology (topology-aware scheduling).
type queueOptions struct {
	cpu     string
	preempt bool
	// tas makes a Topology of the testbed's levels (block, rack, host) for the flavor.
	tas bool
	// devices, when set, is the quota of the logical device resource quotaDevice (Kueue's
	// deviceClassMappings map quotaClass to it).
	devices string
}

// makeQueues creates the test's queues, deleted (the cluster-scoped ones) when the test ends.
// The flavor's nodeLabels (type: kwok) are what Kueue writes into the pods' nodeSelector when
// it admits a JobSet.
func makeQueues(ctx context.Context, t *testing.T, c client.Client, ns string, o queueOptions) queues {
	t.Helper()
	q := queues{flavor: ns, clusterQueue: ns, localQueue: "lq"}
	rf := map[string]any{"nodeLabels": map[string]any{"type": "kwok"}}
	var objs []*unstructured.Unstructured
	if o.tas {
		rf["topologyName"] = ns
		objs = append(objs, kueueObject("Topology", "", ns, map[string]any{"levels": []any{
			map[string]any{"nodeLabel": framework.TopologyBlockLabel},
			map[string]any{"nodeLabel": framework.TopologyRackLabel},
			map[string]any{"nodeLabel": framework.TopologyHostLabel},
		}}))
	}
	covered, quotas := []any{"cpu"}, []any{map[string]any{"name": "cpu", "nominalQuota": o.cpu}}
	if o.devices != "" {
		covered = append(covered, quotaDevice)
		quotas = append(quotas, map[string]any{"name": quotaDevice, "nominalQuota": o.devices})
	}
	cq := map[string]any{
		"namespaceSelector": map[string]any{},
		"resourceGroups": []any{map[string]any{
			"coveredResources": covered,
			"flavors":          []any{map[string]any{"name": q.flavor, "resources": quotas}},
		}},
	}
	if o.preempt {
		cq["preemption"] = map[string]any{"withinClusterQueue": "LowerPriority"}
	}
	objs = append(objs,
		kueueObject("ResourceFlavor", "", q.flavor, rf),
		kueueObject("ClusterQueue", "", q.clusterQueue, cq),
		kueueObject("LocalQueue", ns, q.localQueue, map[string]any{"clusterQueue": q.clusterQueue}),
	)
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	t.Cleanup(func() { deleteClusterScoped(t, c, objs[:len(objs)-1]...) })
	return q
}

// deleteClusterScoped deletes Kueue's cluster-scoped objects of a test, the last first (Kueue
// holds a flavor with a finalizer while a ClusterQueue names it, and a ClusterQueue while
// workloads are admitted in it: they go once those have gone).
func deleteClusterScoped(t *testing.T, c client.Client, objs ...*unstructured.Unstructured) {
	ctx := context.Background()
	for i := len(objs) - 1; i >= 0; i-- {
		if err := client.IgnoreNotFound(c.Delete(ctx, objs[i])); err != nil {
			t.Errorf("deleting %s %s: %v", objs[i].GetKind(), objs[i].GetName(), err)
		}
	}
}

// priorityClass creates a Kueue WorkloadPriorityClass, deleted when the test ends.
func priorityClass(ctx context.Context, t *testing.T, c client.Client, name string, value int64) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"value": value}}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "WorkloadPriorityClass"})
	u.SetName(name)
	if err := c.Create(ctx, u); err != nil {
		t.Fatalf("creating WorkloadPriorityClass %s: %v", name, err)
	}
	t.Cleanup(func() { deleteClusterScoped(t, c, u) })
}

// shape is a JobSet of the suite: a stage init (one pod) and a stage train (trainJobs Jobs of
// trainPods pods), each pod asking for cpu.
//
// With all four add-ons (all): volumeclaims makes a shared PVC data (mounted by every pod) and a
// per-pod PVC ckpt for each train pod, both retained; resourceclaims a claim dev per train Job
// (retained); the sequencer holds train until init is Complete (or Ready: waitFor); podgroups
// makes a gang per stage with scheduler.
type shape struct {
	name, queue, priority string
	all                   bool
	scheduler             contract.Scheduler
	waitFor               string
	initRun, trainRun     string
	trainJobs, trainPods  int
	cpu                   string
	// rack puts the train pods of each Job in one rack (Kueue's topology-aware scheduling).
	rack bool
}

// The policies and claim templates of an all-add-ons shape, as the annotations hold them.
const (
	shapePolicies = `- templates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteMany], resources: {requests: {storage: 1Gi}}}}]
  retentionPolicy: {whenComplete: Retain}
- targetReplicatedJobs: [train]
  templates: [{metadata: {name: ckpt}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]
  retentionPolicy: {whenComplete: Retain}
`
	shapeClaims = `- metadata: {name: dev}
  spec: {devices: {requests: [{name: dev, exactly: {deviceClassName: ` + deviceClass + `}}]}}
  whenJobFinished: Retain
`
)

func (s shape) jobSet(ns string) *jobsetv1alpha2.JobSet {
	js := addontest.JobSet(ns, s.name).Label(queueNameLabel, s.queue)
	if s.priority != "" {
		js.Label(priorityClassLabel, s.priority)
	}
	initJob := addontest.ReplicatedJob("init").Pods(1).Requests(s.cpu, "").PodAnnotation(framework.DelayAnnotationKey, s.initRun)
	train := addontest.ReplicatedJob("train").Replicas(int32(s.trainJobs)).Pods(int32(s.trainPods)).BackoffLimit(ptr.To[int32](2)).
		Requests(s.cpu, "").PodAnnotation(framework.DelayAnnotationKey, s.trainRun)
	if s.all {
		js.Annotation(contract.PoliciesAnnotationKey, shapePolicies).InOrder()
		if s.waitFor != "" {
			js.Annotation(contract.WaitForAnnotationKey, s.waitFor)
		}
		initJob.Mount("data")
		train.Mount("data", "ckpt").JobAnnotation(contract.TemplatesAnnotationKey, shapeClaims)
	}
	if s.scheduler != "" {
		js.Annotation(contract.SchedulerAnnotationKey, string(s.scheduler))
	}
	if s.rack {
		train.PodAnnotation(podsetRequiredTopology, framework.TopologyRackLabel)
	}
	return js.ReplicatedJobs(initJob, train).Obj()
}

// pvcNames are the PVCs volumeclaims makes for an all-add-ons JobSet of the shape.
func (s shape) pvcNames() []string {
	n, _ := contract.SharedVolumeClaimName("data", s.name)
	names := []string{n}
	for j := range s.trainJobs {
		for p := range s.trainPods {
			n, _ := contract.PerPodVolumeClaimName("ckpt", s.name, "train", j, p)
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// claimNames are the ResourceClaims resourceclaims makes for an all-add-ons JobSet (attempt 0).
func (s shape) claimNames() []string {
	var names []string
	for j := range s.trainJobs {
		n, _ := contract.ResourceClaimName(fmt.Sprintf("%s-train-%d", s.name, j), "dev", 0)
		names = append(names, n)
	}
	return names
}

// workload is Kueue's Workload of the JobSet, or nil while there is none.
func workload(ctx context.Context, c client.Client, js *jobsetv1alpha2.JobSet) (*unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "WorkloadList"})
	if err := c.List(ctx, list, client.InNamespace(js.Namespace)); err != nil {
		return nil, err
	}
	for i := range list.Items {
		for _, o := range list.Items[i].GetOwnerReferences() {
			if o.UID == js.UID {
				return &list.Items[i], nil
			}
		}
	}
	return nil, nil
}

// conditionTrue tells whether Kueue's object has the condition True, and its reason.
func conditionTrue(u *unstructured.Unstructured, cond string) (bool, string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == cond {
			reason, _ := m["reason"].(string)
			return m["status"] == "True", reason
		}
	}
	return false, ""
}

// waitWorkload waits until the JobSet's Workload has the condition cond True.
func waitWorkload(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, cond string, timeout time.Duration) *unstructured.Unstructured {
	t.Helper()
	var wl *unstructured.Unstructured
	framework.Eventually(ctx, t, timeout, fmt.Sprintf("Workload of %s %s", js.Name, cond), func(ctx context.Context) (bool, string, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
			return false, err.Error(), nil
		}
		var err error
		if wl, err = workload(ctx, c, js); err != nil || wl == nil {
			return false, fmt.Sprintf("no Workload yet (%v)", err), nil
		}
		ok, _ := conditionTrue(wl, cond)
		conds, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
		return ok, fmt.Sprint(conds), nil
	})
	return wl
}

// pods lists the JobSet's pods.
func pods(ctx context.Context, c client.Client, js *jobsetv1alpha2.JobSet) ([]corev1.Pod, error) {
	var list corev1.PodList
	err := c.List(ctx, &list, client.InNamespace(js.Namespace), client.MatchingLabels{contract.JobSetNameLabelKey: js.Name})
	return list.Items, err
}

// jobs lists the JobSet's Jobs.
func jobs(ctx context.Context, c client.Client, js *jobsetv1alpha2.JobSet) ([]batchv1.Job, error) {
	var list batchv1.JobList
	err := c.List(ctx, &list, client.InNamespace(js.Namespace), client.MatchingLabels{contract.JobSetNameLabelKey: js.Name})
	return list.Items, err
}

// pvcs are the JobSet's PVCs made by volumeclaims, by name.
func pvcs(ctx context.Context, c client.Client, js *jobsetv1alpha2.JobSet) (map[string]corev1.PersistentVolumeClaim, error) {
	var list corev1.PersistentVolumeClaimList
	if err := c.List(ctx, &list, client.InNamespace(js.Namespace), client.MatchingLabels{
		contract.JobSetNameLabelKey: js.Name, contract.ManagedByLabelKey: contract.VolumeClaimsManagedByValue,
	}); err != nil {
		return nil, err
	}
	out := map[string]corev1.PersistentVolumeClaim{}
	for _, p := range list.Items {
		out[p.Name] = p
	}
	return out, nil
}

// claims are the JobSet's ResourceClaims made by resourceclaims, by name.
func claims(ctx context.Context, c client.Client, js *jobsetv1alpha2.JobSet) (map[string]resourcev1.ResourceClaim, error) {
	var list resourcev1.ResourceClaimList
	if err := c.List(ctx, &list, client.InNamespace(js.Namespace), client.MatchingLabels{
		contract.JobSetNameLabelKey: js.Name, contract.ManagedByLabelKey: contract.ResourceClaimsManagedByValue,
	}); err != nil {
		return nil, err
	}
	out := map[string]resourcev1.ResourceClaim{}
	for _, rc := range list.Items {
		out[rc.Name] = rc
	}
	return out, nil
}

// podGroups are the names of the JobSet's PodGroups made by podgroups for the backend.
func podGroups(ctx context.Context, c client.Client, js *jobsetv1alpha2.JobSet, s contract.Scheduler) ([]string, error) {
	sel := []client.ListOption{client.InNamespace(js.Namespace), client.MatchingLabels{
		contract.JobSetNameLabelKey: js.Name, contract.ManagedByLabelKey: contract.PodGroupsManagedByValue,
	}}
	var names []string
	switch s {
	case contract.SchedulerKubernetes:
		var list schedulingv1beta1.PodGroupList
		if err := c.List(ctx, &list, sel...); err != nil {
			return nil, err
		}
		for _, pg := range list.Items {
			if pg.DeletionTimestamp == nil {
				names = append(names, pg.Name)
			}
		}
	case contract.SchedulerCoscheduling:
		var list coschedv1alpha1.PodGroupList
		if err := c.List(ctx, &list, sel...); err != nil {
			return nil, err
		}
		for _, pg := range list.Items {
			if pg.DeletionTimestamp == nil {
				names = append(names, pg.Name)
			}
		}
	}
	slices.Sort(names)
	return names, nil
}

// released is the sequencer's released annotation of the JobSet ("" when absent).
func released(js *jobsetv1alpha2.JobSet) string {
	return js.Annotations[contract.ReleasedAnnotationKey]
}

func stagePodGroup(js string, stage int) string {
	n, _ := contract.StagePodGroupName(js, stage)
	return n
}

// hasGate tells whether the pod carries the scheduling gate.
func hasGate(p *corev1.Pod, gate string) bool {
	return slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == gate })
}

func gateNames(p *corev1.Pod) string {
	var names []string
	for _, g := range p.Spec.SchedulingGates {
		names = append(names, g.Name)
	}
	return strings.Join(names, ",")
}

// bound tells whether the pod has a node.
func bound(p *corev1.Pod) bool { return p.Spec.NodeName != "" }

// jobSetDone waits until the JobSet completed.
func jobSetDone(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, timeout time.Duration) {
	t.Helper()
	framework.Eventually(ctx, t, timeout, fmt.Sprintf("JobSet %s Completed", js.Name), func(ctx context.Context) (bool, string, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
			return false, err.Error(), nil
		}
		if apimeta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetFailed)) {
			return false, "", fmt.Errorf("JobSet %s failed: %+v", js.Name, js.Status.Conditions)
		}
		return apimeta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetCompleted)), fmt.Sprintf("conditions %+v", js.Status.Conditions), nil
	})
}

func publishDevices(ctx context.Context, cfg *envconf.Config) error {
	return eachDevice(cfg, func(c client.Client, o client.Object) error { return client.IgnoreAlreadyExists(c.Create(ctx, o)) })
}

func unpublishDevices(ctx context.Context, cfg *envconf.Config) error {
	return eachDevice(cfg, func(c client.Client, o client.Object) error { return client.IgnoreNotFound(c.Delete(ctx, o)) })
}

// eachDevice calls fn on the suite's DeviceClass and its one ResourceSlice of network-attached
// devices (any node reaches them), enough for every claim of the suite.
func eachDevice(cfg *envconf.Config, fn func(client.Client, client.Object) error) error {
	c, err := client.New(cfg.Client().RESTConfig(), client.Options{Scheme: framework.Scheme})
	if err != nil {
		return err
	}
	rs := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kueue-suite"},
		Spec: resourcev1.ResourceSliceSpec{Driver: deviceClass, AllNodes: ptr.To(true),
			Pool: resourcev1.ResourcePool{Name: "kueue-suite", ResourceSliceCount: 1}},
	}
	for d := range 64 {
		rs.Spec.Devices = append(rs.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("d%d", d)})
	}
	for _, o := range []client.Object{&resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: deviceClass},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "` + deviceClass + `"`}}}},
	}, rs} {
		if err := fn(c, o); err != nil {
			return err
		}
	}
	return nil
}

func key(o client.Object) client.ObjectKey { return client.ObjectKeyFromObject(o) }

// conditionTrueOf reads the JobSet's Workload and tells whether it has the condition True.
func conditionTrueOf(ctx context.Context, c client.Client, js *jobsetv1alpha2.JobSet, cond string) (bool, string) {
	wl, err := workload(ctx, c, js)
	if err != nil || wl == nil {
		return false, ""
	}
	return conditionTrue(wl, cond)
}

// conditionTime is when Kueue's object's condition last changed (zero when it has none).
func conditionTime(u *unstructured.Unstructured, cond string) time.Time {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == cond {
			s, _ := m["lastTransitionTime"].(string)
			at, _ := time.Parse(time.RFC3339, s)
			return at
		}
	}
	return time.Time{}
}

// startedAt is when the pod started (zero if it did not).
func startedAt(p *corev1.Pod) time.Time {
	if p.Status.StartTime == nil {
		return time.Time{}
	}
	return p.Status.StartTime.Time
}

// finishedAt is when the pod's last container finished (zero if none did).
func finishedAt(p *corev1.Pod) time.Time {
	var at time.Time
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.FinishedAt.After(at) {
			at = t.FinishedAt.Time
		}
	}
	return at
}

// mounts tells whether the pod has a volume of the PVC.
func mounts(p *corev1.Pod, pvc string) bool {
	return slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool {
		return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == pvc
	})
}
