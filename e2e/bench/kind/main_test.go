// Package kind_test holds the first real-node figures (make bench-kind): the add-ons on a kind
// cluster of real containers, the chart installed from images built here, against the same
// JobSets without them, in the same run. kindbed makes the cluster, as for the kind suite.
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

func TestMain(m *testing.M) {
	kindbed.RunTests(m, func(e env.Environment, c kindbed.Config) { testenv, kb = e, c })
}
