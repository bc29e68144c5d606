package contract

import (
	"testing"
)

// `go test` runs each target on its seeds only, the files of testdata/fuzz/<target> (good and
// bad values; kubectl jobset-addons' tests check that the webhooks and lint refuse the bad
// ones alike); `go test -fuzz=FuzzParseVolumeClaimPolicies` explores further.

func marshalAny[T any](v T) (string, error) { return marshal(v) }

func FuzzParseVolumeClaimPolicies(f *testing.F) {
	fuzzParser(f, ParseVolumeClaimPolicies, marshalAny)
}

func FuzzParseResourceClaimTemplates(f *testing.F) {
	fuzzParser(f, ParseResourceClaimTemplates, marshalAny)
}

func FuzzParseDependsOn(f *testing.F) {
	fuzzParser(f, ParseDependsOn, marshalAny)
}

func FuzzParseNetworkTopology(f *testing.F) {
	fuzzParser(f, ParseNetworkTopology, marshalAny)
}

func FuzzParseReleased(f *testing.F) {
	fuzzParser(f, ParseReleased, func(r Released) (string, error) { return r.String(), nil })
}

func FuzzParseExecutionPolicy(f *testing.F) {
	fuzzParser(f, ParseExecutionPolicy, func(p ExecutionPolicy) (string, error) { return string(p), nil })
}

func FuzzParseWaitFor(f *testing.F) {
	fuzzParser(f, ParseWaitFor, func(s DependencyStatus) (string, error) { return string(s), nil })
}

func FuzzParseScheduler(f *testing.F) {
	fuzzParser(f, ParseScheduler, func(s Scheduler) (string, error) { return string(s), nil })
}
