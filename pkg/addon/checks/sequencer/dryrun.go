package sequencer

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// DryRunPodPrefix is the generateName of the pods the webhook dry-runs.
const DryRunPodPrefix = "jobset-addons-dry-run-"

// BarrierDryRuns are the pods for the API server to judge (the webhook's dry runs, lint's
// offline validation), one per distinct pod template that
// has the start barrier's init container (as admitted, after InjectBarrier): the pod as the Job
// would make it from the template, in the JobSet's namespace, with a generated name. A JobSet
// that another controller manages (spec.managedBy) makes no pods here: none.
//
// The pod carries none of the add-ons' own labels (domain jobset-addons.io), which scope their
// pod webhooks to the pods of a Job (volumeclaims' per-pod volumes need a completion index),
// nor JobSet's and the Job's, which scope theirs: a dry run is judged by the API server's own
// rules, the namespace's quota, LimitRanges and Pod Security, and other webhooks on every pod.
func BarrierDryRuns(js *jobsetv1alpha2.JobSet) []addon.DryRun {
	if !UsesBarrier(js) || contract.ManagedElsewhere(js.Spec.ManagedBy) {
		return nil
	}
	seen := map[string]bool{}
	var out []addon.DryRun
	for i := range js.Spec.ReplicatedJobs {
		pt := &js.Spec.ReplicatedJobs[i].Template.Spec.Template
		if !HasBarrier(&pt.Spec) {
			continue
		}
		labels := withoutAddonKeys(pt.Labels)
		annotations := withoutAddonKeys(pt.Annotations)
		key := addon.TemplateKey(js.Namespace, labels, annotations, pt.Spec)
		if key != "" && seen[key] {
			continue
		}
		seen[key] = true
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: DryRunPodPrefix, Namespace: js.Namespace, Labels: labels, Annotations: annotations},
			Spec:       *pt.Spec.DeepCopy(),
		}
		standInVolumes(&pod.Spec)
		path := field.NewPath("spec", "replicatedJobs").Index(i).Child("template", "spec", "template")
		out = append(out, addon.DryRun{
			Path:   path,
			What:   "a pod with the start barrier's init container " + contract.StartBarrierContainerName,
			Object: pod,
			Key:    key,
		})
	}
	return out
}

// withoutAddonKeys is m without the keys of the add-ons' domain; nil when nothing is left.
func withoutAddonKeys(m map[string]string) map[string]string {
	var out map[string]string
	for k, v := range m {
		prefix, _, found := strings.Cut(k, "/")
		if found && (prefix == contract.Domain || strings.HasSuffix(prefix, "."+contract.Domain)) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}

// standInVolumes adds an emptyDir volume for each volumeMount of the spec whose volume the
// template does not have. Others add those volumes after admission: upstream JobSet's
// volumeClaimPolicies to each Job it makes (Kubeflow Trainer's runtimes with initializers mount
// their "initializer" volume so), volumeclaims' per-pod webhook to each pod. Without a stand-in
// the API server would refuse the dry-run pod for a volume the real pod has; what the dry run is
// for, the namespace's quota, LimitRanges and Pod Security, does not depend on the volume's kind
// (restricted allows emptyDir as it allows a PVC).
func standInVolumes(spec *corev1.PodSpec) {
	have := map[string]bool{}
	for _, v := range spec.Volumes {
		have[v.Name] = true
	}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			for _, m := range c.VolumeMounts {
				if !have[m.Name] {
					have[m.Name] = true
					spec.Volumes = append(spec.Volumes, corev1.Volume{Name: m.Name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
				}
			}
		}
	}
}
