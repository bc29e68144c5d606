// Package repo holds what every e2e package (the testbed, kindbed, the framework, the suites)
// shares and none owns: where the checkout is, and the names both clusters give the gang
// schedulers.
package repo

import (
	"errors"
	"os"
	"path/filepath"
)

// The gang schedulers run beside kube-scheduler, on the testbed and on kind alike; podgroups'
// pods choose one by schedulerName.
const (
	// VolcanoSchedulerName is the schedulerName Volcano's scheduler serves (Volcano's own
	// default, and podgroups').
	VolcanoSchedulerName = "volcano"
	// CoschedulingSchedulerName is the schedulerName of scheduler-plugins' scheduler with the
	// Coscheduling plugin (scheduler-plugins' own name for it as a second scheduler, and
	// podgroups' default).
	CoschedulingSchedulerName = "scheduler-plugins-scheduler"
	// KAISchedulerName is the schedulerName of KAI Scheduler (KAI's own default, and
	// podgroups').
	KAISchedulerName = "kai-scheduler"
)

// Root walks up from the working directory to the directory holding go.work.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work above the working directory: run from inside the repository")
		}
		dir = parent
	}
}

// JobSetAlphaGates are the alpha feature gates of JobSet v0.12.0 (its pkg/features), every one
// of them turned on in the JobSet controller the testbed runs and in the one installed on kind,
// so that the add-ons are proven beside what each changes in a running JobSet:
//   - ElasticJobSet: parallelism and completions of an Indexed ReplicatedJob may change while
//     the JobSet runs (JobSet patches its active Jobs when the two are equal);
//   - InPlaceRestart: failurePolicy.restartStrategy InPlaceRestart (KEP-467), pods restarted in
//     place by their agent sidecar instead of their Jobs re-created;
//   - RestartJob: the failure policy actions RestartJob and RestartJobAndIgnoreMaxRestarts, only
//     the failed Job re-created.
//
// (TLSOptions, beta, is on by default.) JobSet before v0.12.0 has none of them.
var JobSetAlphaGates = []string{"ElasticJobSet", "InPlaceRestart", "RestartJob"}

// JobSetFeatureGatesYAML is the featureGates field of a JobSet Configuration
// (config.jobset.x-k8s.io/v1alpha1) that turns on every gate of JobSetAlphaGates.
func JobSetFeatureGatesYAML() string {
	s := "featureGates:\n"
	for _, g := range JobSetAlphaGates {
		s += "  " + g + ": true\n"
	}
	return s
}
