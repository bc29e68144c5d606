package sequencer

import (
	"fmt"
	"slices"
	"strings"

	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// kueueWarnings tells the user of a JobSet queued by Kueue (it names a LocalQueue) whose
// sequencer-held stages wait for a predecessor to complete that Kueue's waitForPodsReady may
// evict it while its first stages work. Kueue's JobSet integration counts the JobSet's pods
// ready when every ReplicatedJob's Jobs are ready or succeeded (Ready+Succeeded of each
// replicatedJobsStatus against its replicas), so the pods the sequencer holds back keep the
// Workload's PodsReady False until the last stage runs, and Kueue evicts a Workload not
// PodsReady within waitForPodsReady.timeout of its admission (Kueue v0.19 turns it on by
// default, 30 minutes). Nothing the sequencer may write changes what Kueue reads: the webhook
// cannot read Kueue's configuration either, so it warns whenever the shape allows it
// (docs/install.md, "With Kueue").
func kueueWarnings(js *jobsetv1alpha2.JobSet, stages []contract.Stage) []string {
	queue := js.Labels[contract.KueueQueueNameLabelKey]
	if queue == "" {
		return nil
	}
	var waiting, awaited []string
	for _, s := range stages {
		if s.Index == 0 || !s.Gated {
			continue
		}
		complete := false
		for _, d := range s.DependsOn {
			if d.Status == contract.DependencyComplete {
				complete = true
				if !slices.Contains(awaited, d.Name) {
					awaited = append(awaited, d.Name)
				}
			}
		}
		if complete {
			waiting = append(waiting, s.ReplicatedJobs...)
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("sequencer: the JobSet names LocalQueue %q, and Kueue's waitForPodsReady (on by default since Kueue v0.19, timeout 30m) "+
		"evicts it if ReplicatedJobs %s still wait for %s to complete when waitForPodsReady.timeout has passed since admission: "+
		"Kueue counts the JobSet's pods ready only when every ReplicatedJob's Jobs are ready or succeeded, and the pods the sequencer holds back are not; "+
		"the eviction deletes the running stage's pods, which start again from the beginning at re-admission. "+
		"Set waitForPodsReady.timeout in Kueue's Configuration longer than the stages before the last take to complete, "+
		"or use wait-for Ready where a stage may run beside its predecessors. See docs/install.md, With Kueue",
		queue, strings.Join(waiting, ", "), strings.Join(awaited, ", "))}
}
