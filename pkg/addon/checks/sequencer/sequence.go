// Package sequencer reads a JobSet's sequencing and start barrier through the contract
// (contract.Stages) and says what the sequencer's webhooks inject and what its controller
// releases, so that the two agree; and it holds the checks and Warnings of the webhooks that
// need no cluster (Default, ParseJobSet and its Validate and Warnings), which kubectl
// jobset-addons lint runs offline, and the barrier pods the webhook dry-runs and lint validates
// as the API server would (BarrierDryRuns); the dry runs themselves stay with the controller.
package sequencer

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Uses tells whether the JobSet carries any sequencer annotation: the execution-policy, wait-for
// or start-barrier annotation, or a depends-on annotation on a ReplicatedJob.
func Uses(js *jobsetv1alpha2.JobSet) bool {
	return Sequences(js) || UsesBarrier(js)
}

// Sequences tells whether the JobSet carries a sequencing annotation: the execution-policy or
// wait-for annotation, or a depends-on annotation on a ReplicatedJob.
func Sequences(js *jobsetv1alpha2.JobSet) bool {
	if _, ok := js.Annotations[contract.ExecutionPolicyAnnotationKey]; ok {
		return true
	}
	if _, ok := js.Annotations[contract.WaitForAnnotationKey]; ok {
		return true
	}
	for _, rj := range js.Spec.ReplicatedJobs {
		if _, ok := rj.Template.Annotations[contract.DependsOnAnnotationKey]; ok {
			return true
		}
	}
	return false
}

// Stages are the JobSet's stages (contract.Stages).
func Stages(js *jobsetv1alpha2.JobSet) ([]contract.Stage, field.ErrorList) {
	return jobsets.Stages(js)
}

// GatedStages are the stages whose pods the sequencer holds back: Index > 0 and Gated.
func GatedStages(stages []contract.Stage) []contract.Stage {
	var out []contract.Stage
	for _, s := range stages {
		if s.Index > 0 && s.Gated {
			out = append(out, s)
		}
	}
	return out
}

// Inject adds, to the pod template of every ReplicatedJob of a gated stage, the scheduling gate
// and the gated scope label. It is idempotent. It returns the ReplicatedJobs it gated.
func Inject(js *jobsetv1alpha2.JobSet, stages []contract.Stage) []string {
	var gated []string
	for _, s := range GatedStages(stages) {
		for _, name := range s.ReplicatedJobs {
			rj := ReplicatedJob(js, name)
			if rj == nil {
				continue
			}
			pt := &rj.Template.Spec.Template
			if pt.Labels == nil {
				pt.Labels = map[string]string{}
			}
			pt.Labels[contract.SequencerGatedLabelKey] = contract.EnabledValue
			if !HasGate(pt.Spec.SchedulingGates) {
				pt.Spec.SchedulingGates = append(pt.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: contract.SequencerSchedulingGateValue})
			}
			gated = append(gated, name)
		}
	}
	return gated
}

// HasGate tells whether gates hold the sequencer's scheduling gate.
func HasGate(gates []corev1.PodSchedulingGate) bool {
	return slices.ContainsFunc(gates, func(g corev1.PodSchedulingGate) bool { return g.Name == contract.SequencerSchedulingGateValue })
}

// Admitted tells whether every ReplicatedJob of a gated stage has the gate in its pod template,
// that is, whether the mutating webhook ran when the JobSet was created.
func Admitted(js *jobsetv1alpha2.JobSet, stages []contract.Stage) bool {
	for _, s := range GatedStages(stages) {
		for _, name := range s.ReplicatedJobs {
			if rj := ReplicatedJob(js, name); rj != nil && !HasGate(rj.Template.Spec.Template.Spec.SchedulingGates) {
				return false
			}
		}
	}
	return true
}

// ReplicatedJob returns the ReplicatedJob of the JobSet with that name, or nil.
func ReplicatedJob(js *jobsetv1alpha2.JobSet, name string) *jobsetv1alpha2.ReplicatedJob {
	return jobsets.ReplicatedJob(js, name)
}
