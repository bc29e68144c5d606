package contract

import (
	"testing"
)

// `go test` runs each target on its seeds only; `go test -fuzz=FuzzParseVolumeClaimPolicies`
// explores further.

func marshalAny[T any](v T) (string, error) { return marshal(v) }

func FuzzParseVolumeClaimPolicies(f *testing.F) {
	fuzzParser(f, []string{
		story3Policies,
		`[{"targetReplicatedJobs":["node"],"templates":[` + okPVC + `],"retentionPolicy":{"whenDeleted":"Retain"}}]`,
		`[{"templates":[{"metadata":{"name":"d","labels":{"a":"b"},"annotations":{"x/y":"z"}},"spec":{"accessModes":["ReadWriteMany"],` +
			`"resources":{"requests":{"storage":"1.5Gi"},"limits":{"storage":"2e3"}},"volumeMode":"Filesystem","selector":{"matchLabels":{"k":"v"}}}}]}]`,
		`[{"templates":[` + okPVC + `],"retentionPolicy":{"whenFaild":"Delete"}}]`,
		`[{"templates":[` + okPVC + `],"retentionPolicy":{"whenDeleted":"Delete","whenDeleted":"Retain"}}]`,
		"- templates:\n  - metadata: {name: x}\n    spec: {resources: 10Gi}\n",
		"- templates: [",
		"", "[]", "null", "{}", "[null]", "[{}]", "- a\n- b\n",
	}, ParseVolumeClaimPolicies, marshalAny)
}

func FuzzParseResourceClaimTemplates(f *testing.F) {
	fuzzParser(f, []string{
		kep762Templates,
		`[` + okClaim + `]`,
		`[{"metadata":{"name":"a"},"spec":{},"containers":[]},{"metadata":{"name":"b"},"spec":{},"containers":["c1","c2"],"whenJobFinished":"Retain"}]`,
		`[{"metadata":{"name":"c"},"spec":{"devices":{"config":[{"opaque":{"driver":"d.example.com","parameters":{"a":[1,{"b":null}]}}}]}}}]`,
		`[{"metadata":{"name":"imex"},"spec":{"devices":{"request":[]}}}]`,
		"- metadata: {name: gpus}\n  spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: g, count: two}}]}}\n",
		`[{"metadata":{"name":"imex"},"spec":{},"containers":"worker"}]`,
		"", "[]", "[1]", `[{"metadata":{"name":"a","name":"b"}}]`,
	}, ParseResourceClaimTemplates, marshalAny)
}

func FuzzParseDependsOn(f *testing.F) {
	fuzzParser(f, []string{
		"- name: a\n- name: b\n  status: Ready\n",
		`[{"name":"a","status":"Succeeded"}]`,
		`[{"name":"a","state":"Ready"}]`,
		"- name: a\n- name: a\n",
		"a", "", "[]", "[{}]", `[{"name":1}]`,
	}, ParseDependsOn, marshalAny)
}

func FuzzParseNetworkTopology(f *testing.F) {
	fuzzParser(f, []string{
		"{}", "mode: soft\nhighestTierAllowed: 2\n", `{"highestTierAllowed":1}`,
		"mode: strict", `{"highestTierAllowed":0}`, `highestTierAllowed: "2"`, "[hard]", "", "null",
		`{"mode":"hard","mode":"soft"}`, `{"highestTierAllowed":1e400}`,
	}, ParseNetworkTopology, marshalAny)
}

func FuzzParseReleased(f *testing.F) {
	fuzzParser(f, []string{`{"restartAttempt":0,"replicatedJobs":[]}`, `{"replicatedJobs":["a","b"]}`,
		"restartAttempt: 2\nreplicatedJobs: [node]\n", `{"restartAttempt":-1}`, `{"replicatedJobs":["a","a"]}`,
		`{"replicatedJobs":[""]}`, `{"stages":[1]}`, "[1]", "", "null", `{"restartAttempt":"1"}`},
		ParseReleased, func(r Released) (string, error) { return r.String(), nil })
}

func FuzzParseExecutionPolicy(f *testing.F) {
	fuzzParser(f, []string{"InOrder", "inorder", "AnyOrder", ""},
		ParseExecutionPolicy, func(p ExecutionPolicy) (string, error) { return string(p), nil })
}

func FuzzParseWaitFor(f *testing.F) {
	fuzzParser(f, []string{"Complete", "Ready", "Succeeded", "Failed", ""},
		ParseWaitFor, func(s DependencyStatus) (string, error) { return string(s), nil })
}

func FuzzParseScheduler(f *testing.F) {
	fuzzParser(f, []string{"volcano", "coscheduling", "kubernetes", "Volcano", ""},
		ParseScheduler, func(s Scheduler) (string, error) { return string(s), nil })
}
