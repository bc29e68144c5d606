// Package kind_test runs the add-ons as users run them: a kind cluster of real containers, the
// chart installed from images built here, webhooks reached through their Services, and real
// pods writing to the volumes, reading the devices and waiting behind the gates the add-ons
// make (make e2e-kind). kindbed makes the cluster; it is deleted at the end unless
// E2E_KIND_KEEP=1.
package kind_test

import (
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/jobset-addons/jobset-addons/e2e/kindbed"
)

var (
	testenv env.Environment
	kb      kindbed.Config
)

func logf(format string, args ...any) { kindbed.Logf(format, args...) }

func TestMain(m *testing.M) {
	kindbed.RunTests(m, func(e env.Environment, c kindbed.Config) { testenv, kb = e, c })
}
