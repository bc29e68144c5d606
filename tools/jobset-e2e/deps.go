//go:build tools

// Package jobsete2e pins sigs.k8s.io/jobset's own e2e suite (test/e2e of its module) so that
// `go test -c sigs.k8s.io/jobset/test/e2e` builds it from here (make e2e-upstream). A package
// of only _test.go files cannot be imported: its imports outside the standard library are, so
// that go mod tidy keeps what the suite needs.
package jobsete2e

import (
	_ "github.com/google/go-cmp/cmp/cmpopts"
	_ "github.com/onsi/ginkgo/v2"
	_ "github.com/onsi/gomega"
	_ "k8s.io/cli-runtime/pkg/printers"
	_ "sigs.k8s.io/controller-runtime/pkg/client/config"
	_ "sigs.k8s.io/jobset/client-go/applyconfiguration/jobset/v1alpha2"
	_ "sigs.k8s.io/jobset/pkg/util/testing"
	_ "sigs.k8s.io/jobset/test/util"
)
