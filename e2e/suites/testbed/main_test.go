// Package testbed_test proves that the testbed is a real cluster: JobSets complete, volumes
// bind, DRA claims are allocated, and the garbage collector works.
package testbed_test

import (
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
)

var testenv env.Environment

func TestMain(m *testing.M) {
	testenv = framework.NewEnvironment()
	os.Exit(testenv.Run(m))
}
