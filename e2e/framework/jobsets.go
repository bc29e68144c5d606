package framework

import (
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// AllAddonsDeviceClass is the DeviceClass of AllAddonsJobSet's per-Job claim.
const AllAddonsDeviceClass = "gpu.example.com"

// AllAddonsJobSet is a JobSet that uses the four add-ons: a shared and a per-pod PVC (volumeclaims),
// a claim per Job of node (resourceclaims), node waiting for init to complete (sequencer), and a
// gang per stage of Kubernetes' own Workload and PodGroups (podgroups). Its pods run a second.
//
// AllAddonsDeviceClass is its claim's DeviceClass: PublishDevices of it lets the claim be
// allocated.
func AllAddonsJobSet(ns, name string) *jobsetv1alpha2.JobSet {
	rj := func(name string, mounts ...string) *addontest.ReplicatedJobWrapper {
		return addontest.ReplicatedJob(name).Pods(1).PodAnnotation(DelayAnnotationKey, "1s").Mount(mounts...)
	}
	node := rj("node", "data", "ckpt").JobAnnotation(contract.TemplatesAnnotationKey,
		`[{metadata: {name: gpu}, spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: `+AllAddonsDeviceClass+`}}]}}}]`)
	pvc := func(name string) string {
		return `{metadata: {name: ` + name + `}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}`
	}
	return addontest.JobSet(ns, name).
		Annotation(contract.PoliciesAnnotationKey, `[{templates: [`+pvc("data")+`]}, {targetReplicatedJobs: [node], templates: [`+pvc("ckpt")+`]}]`).
		InOrder().Annotation(contract.SchedulerAnnotationKey, "kubernetes").
		ReplicatedJobs(rj("init"), node).Obj()
}

// WithoutAddons is js, a copy, with none of the add-ons' annotations and no volume mounts (their
// volumes were volumeclaims'): the same JobSet as upstream JobSet alone runs it, a control.
func WithoutAddons(js *jobsetv1alpha2.JobSet) *jobsetv1alpha2.JobSet {
	out := js.DeepCopy()
	for _, key := range []string{contract.PoliciesAnnotationKey, contract.ExecutionPolicyAnnotationKey, contract.SchedulerAnnotationKey} {
		delete(out.Annotations, key)
	}
	for i := range out.Spec.ReplicatedJobs {
		rj := &out.Spec.ReplicatedJobs[i]
		delete(rj.Template.Annotations, contract.TemplatesAnnotationKey)
		for c := range rj.Template.Spec.Template.Spec.Containers {
			rj.Template.Spec.Template.Spec.Containers[c].VolumeMounts = nil
		}
	}
	return out
}
