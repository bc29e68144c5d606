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
