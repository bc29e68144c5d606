package contract

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The paths the invalid values below are parsed at, written out in full.
const (
	pol = "metadata.annotations[volumeclaims.jobset-addons.io/policies]"
	rct = "spec.replicatedJobs[0].template.metadata.annotations[resourceclaims.jobset-addons.io/templates]"
	dep = "spec.replicatedJobs[1].template.metadata.annotations[sequencer.jobset-addons.io/depends-on]"
	exe = "metadata.annotations[sequencer.jobset-addons.io/execution-policy]"
	wf  = "metadata.annotations[sequencer.jobset-addons.io/wait-for]"
	rel = "metadata.annotations[sequencer.jobset-addons.io/released]"
	sch = "metadata.annotations[podgroups.jobset-addons.io/scheduler]"
	ntp = "metadata.annotations[podgroups.jobset-addons.io/network-topology]"
)

// parser is a parser whose value the invalid cases ignore.
type parser struct {
	parse func(string, *field.Path) field.ErrorList
	path  *field.Path
}

func errorsOf[T any](parse func(string, *field.Path) (T, field.ErrorList)) func(string, *field.Path) field.ErrorList {
	return func(value string, path *field.Path) field.ErrorList {
		_, errs := parse(value, path)
		return errs
	}
}

var (
	policiesParser  = parser{errorsOf(ParseVolumeClaimPolicies), JobSetAnnotationPath(PoliciesAnnotationKey)}
	templatesParser = parser{errorsOf(ParseResourceClaimTemplates), ReplicatedJobAnnotationPath(0, TemplatesAnnotationKey)}
	dependsOnParser = parser{errorsOf(ParseDependsOn), ReplicatedJobAnnotationPath(1, DependsOnAnnotationKey)}
	policyParser    = parser{errorsOf(ParseExecutionPolicy), JobSetAnnotationPath(ExecutionPolicyAnnotationKey)}
	waitForParser   = parser{errorsOf(ParseWaitFor), JobSetAnnotationPath(WaitForAnnotationKey)}
	releasedParser  = parser{errorsOf(ParseReleased), JobSetAnnotationPath(ReleasedAnnotationKey)}
	schedulerParser = parser{errorsOf(ParseScheduler), JobSetAnnotationPath(SchedulerAnnotationKey)}
	topologyParser  = parser{errorsOf(ParseNetworkTopology), JobSetAnnotationPath(NetworkTopologyAnnotationKey)}
)

// A PVC template and a claim template that are valid, to build invalid values around.
const (
	okPVC   = `{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`
	okClaim = `{"metadata":{"name":"imex"},"spec":{"devices":{"requests":[{"name":"imex","exactly":{"deviceClassName":"imex.nvidia.com"}}]}}}`
)

func TestInvalidValues(t *testing.T) {
	cases := map[string]struct {
		parser   parser
		value    string
		wantErrs []fieldErr
	}{
		// volumeclaims.jobset-addons.io/policies
		"policies: misspelled retention field": {
			parser:   policiesParser,
			value:    `[{"templates":[` + okPVC + `],"retentionPolicy":{"whenFaild":"Delete"}}]`,
			wantErrs: []fieldErr{{notSupported, pol + "[0].retentionPolicy.whenFaild"}},
		},
		"policies: misspelled policy field, YAML": {
			parser:   policiesParser,
			value:    "- targetReplicatedJob: [node]\n  templates: [" + okPVC + "]\n",
			wantErrs: []fieldErr{{notSupported, pol + "[0].targetReplicatedJob"}},
		},
		"policies: retention value not Delete or Retain": {
			parser:   policiesParser,
			value:    "- templates: [" + okPVC + "]\n  retentionPolicy:\n    whenFailed: Keep\n",
			wantErrs: []fieldErr{{notSupported, pol + "[0].retentionPolicy.whenFailed"}},
		},
		"policies: string where the PVC spec wants an object": {
			parser: policiesParser,
			value: `
- templates:
  - ` + okPVC + `
  - metadata: {name: scratch}
    spec:
      accessModes: [ReadWriteOnce]
      resources: 10Gi
`,
			wantErrs: []fieldErr{{typeInvalid, pol + "[0].templates[1].spec.resources"}},
		},
		"policies: template without a name": {
			parser:   policiesParser,
			value:    `[{"templates":[{"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}]}]`,
			wantErrs: []fieldErr{{required, pol + "[0].templates[0].metadata.name"}},
		},
		"policies: template name not a DNS-1123 label": {
			parser:   policiesParser,
			value:    `[{"templates":[{"metadata":{"name":"Data_Dir"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}]}]`,
			wantErrs: []fieldErr{{invalid, pol + "[0].templates[0].metadata.name"}},
		},
		"policies: template with a namespace": {
			parser:   policiesParser,
			value:    `[{"templates":[{"metadata":{"name":"data","namespace":"other"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}]}]`,
			wantErrs: []fieldErr{{forbidden, pol + "[0].templates[0].metadata.namespace"}},
		},
		"policies: template name repeated in another policy": {
			parser:   policiesParser,
			value:    `[{"templates":[` + okPVC + `]},{"targetReplicatedJobs":["node"],"templates":[` + okPVC + `]}]`,
			wantErrs: []fieldErr{{duplicate, pol + "[1].templates[0].metadata.name"}},
		},
		"policies: target repeated": {
			parser:   policiesParser,
			value:    `[{"targetReplicatedJobs":["node","node"],"templates":[` + okPVC + `]}]`,
			wantErrs: []fieldErr{{duplicate, pol + "[0].targetReplicatedJobs[1]"}},
		},
		"policies: empty target name": {
			parser:   policiesParser,
			value:    `[{"targetReplicatedJobs":[""],"templates":[` + okPVC + `]}]`,
			wantErrs: []fieldErr{{required, pol + "[0].targetReplicatedJobs[0]"}},
		},
		"policies: target name of the wrong type": {
			parser:   policiesParser,
			value:    "- targetReplicatedJobs: [7]\n  templates: [" + okPVC + "]\n",
			wantErrs: []fieldErr{{typeInvalid, pol + "[0].targetReplicatedJobs[0]"}},
		},
		"policies: key repeated in a JSON object": {
			parser:   policiesParser,
			value:    `[{"templates":[` + okPVC + `],"retentionPolicy":{"whenDeleted":"Delete","whenDeleted":"Retain"}}]`,
			wantErrs: []fieldErr{{duplicate, pol + "[0].retentionPolicy.whenDeleted"}},
		},
		"policies: key repeated in a YAML mapping": {
			parser:   policiesParser,
			value:    "- templates: [" + okPVC + "]\n  retentionPolicy:\n    whenDeleted: Delete\n    whenDeleted: Retain\n",
			wantErrs: []fieldErr{{duplicate, pol}},
		},
		"policies: empty value": {
			parser:   policiesParser,
			value:    "",
			wantErrs: []fieldErr{{required, pol}},
		},
		"policies: empty list": {
			parser:   policiesParser,
			value:    "[]",
			wantErrs: []fieldErr{{required, pol}},
		},
		"policies: an object, not a list": {
			parser:   policiesParser,
			value:    `{"templates":[` + okPVC + `]}`,
			wantErrs: []fieldErr{{typeInvalid, pol}},
		},
		"policies: neither YAML nor JSON": {
			parser:   policiesParser,
			value:    "- templates: [",
			wantErrs: []fieldErr{{invalid, pol}},
		},
		"policies: no templates": {
			parser:   policiesParser,
			value:    `[{"targetReplicatedJobs":["node"]}]`,
			wantErrs: []fieldErr{{required, pol + "[0].templates"}},
		},
		"policies: template without storage request (access modes are the API server's)": {
			parser:   policiesParser,
			value:    `[{"templates":[{"metadata":{"name":"data"},"spec":{"storageClassName":"fast"}}]}]`,
			wantErrs: []fieldErr{{required, pol + "[0].templates[0].spec.resources.requests[storage]"}},
		},
		"policies: malformed quantity": {
			parser:   policiesParser,
			value:    `[{"templates":[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"lots"}}}}]}]`,
			wantErrs: []fieldErr{{invalid, pol + "[0].templates[0].spec.resources.requests[storage]"}},
		},
		"policies: every error of several policies at once": {
			parser: policiesParser,
			value: `
- targetReplicatedJobs: [node, node]
  templates:
  - metadata: {name: data, namespace: x}
    spec: {accessModes: [ReadWriteSometimes], resources: {requests: {storage: 1Gi}}}
  retentionPolicy: {whenComplete: Keep, whenDeleted: Gone}
- templates: []
  extra: true
`,
			wantErrs: []fieldErr{
				{notSupported, pol + "[1].extra"},
				{duplicate, pol + "[0].targetReplicatedJobs[1]"},
				{forbidden, pol + "[0].templates[0].metadata.namespace"},
				{notSupported, pol + "[0].retentionPolicy.whenComplete"},
				{notSupported, pol + "[0].retentionPolicy.whenDeleted"},
				{required, pol + "[1].templates"},
			},
		},
		"policies: finishedPods Delete with nothing deleted on finish": {
			parser:   policiesParser,
			value:    "- templates: [" + okPVC + "]\n  retentionPolicy: {whenComplete: Retain, finishedPods: Delete}\n",
			wantErrs: []fieldErr{{invalid, pol + "[0].retentionPolicy.finishedPods"}},
		},
		"policies: finishedPods not a retention": {
			parser:   policiesParser,
			value:    "- templates: [" + okPVC + "]\n  retentionPolicy: {whenComplete: Delete, finishedPods: Evict}\n",
			wantErrs: []fieldErr{{notSupported, pol + "[0].retentionPolicy.finishedPods"}},
		},

		// resourceclaims.jobset-addons.io/templates
		"templates: no name": {
			parser:   templatesParser,
			value:    `[{"spec":{}}]`,
			wantErrs: []fieldErr{{required, rct + "[0].metadata.name"}},
		},
		"templates: name not a DNS-1123 label": {
			parser:   templatesParser,
			value:    `[{"metadata":{"name":"imex.channel"},"spec":{}}]`,
			wantErrs: []fieldErr{{invalid, rct + "[0].metadata.name"}},
		},
		"templates: name repeated": {
			parser:   templatesParser,
			value:    `[` + okClaim + `,` + okClaim + `]`,
			wantErrs: []fieldErr{{duplicate, rct + "[1].metadata.name"}},
		},
		"templates: container repeated": {
			parser:   templatesParser,
			value:    "- metadata: {name: imex}\n  spec: {}\n  containers: [worker, worker]\n",
			wantErrs: []fieldErr{{duplicate, rct + "[0].containers[1]"}},
		},
		"templates: containers a string, not a list": {
			parser:   templatesParser,
			value:    "- metadata: {name: imex}\n  spec: {}\n  containers: worker\n",
			wantErrs: []fieldErr{{typeInvalid, rct + "[0].containers"}},
		},
		"templates: whenJobFinished not Delete or Retain": {
			parser:   templatesParser,
			value:    `[{"metadata":{"name":"imex"},"spec":{},"whenJobFinished":"Keep"}]`,
			wantErrs: []fieldErr{{notSupported, rct + "[0].whenJobFinished"}},
		},
		"templates: unknown field deep in the claim spec": {
			parser:   templatesParser,
			value:    `[{"metadata":{"name":"imex"},"spec":{"devices":{"request":[]}}}]`,
			wantErrs: []fieldErr{{notSupported, rct + "[0].spec.devices.request"}},
		},
		"templates: string where the claim spec wants an integer": {
			parser: templatesParser,
			value: `
- metadata: {name: gpus}
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.nvidia.com, count: two}
`,
			wantErrs: []fieldErr{{typeInvalid, rct + "[0].spec.devices.requests[0].exactly.count"}},
		},
		"templates: template with owner references": {
			parser:   templatesParser,
			value:    `[{"metadata":{"name":"imex","ownerReferences":[]},"spec":{}}]`,
			wantErrs: []fieldErr{{forbidden, rct + "[0].metadata.ownerReferences"}},
		},

		// sequencer.jobset-addons.io/depends-on
		"depends-on: status not Ready or Complete": {
			parser:   dependsOnParser,
			value:    "- name: init\n  status: Failed\n",
			wantErrs: []fieldErr{{notSupported, dep + "[0].status"}},
		},
		"depends-on: no name": {
			parser:   dependsOnParser,
			value:    `[{"status":"Ready"}]`,
			wantErrs: []fieldErr{{required, dep + "[0].name"}},
		},
		"depends-on: name repeated": {
			parser:   dependsOnParser,
			value:    "- name: init\n- name: init\n  status: Ready\n",
			wantErrs: []fieldErr{{duplicate, dep + "[1].name"}},
		},
		"depends-on: unknown field": {
			parser:   dependsOnParser,
			value:    `[{"name":"init","state":"Ready"}]`,
			wantErrs: []fieldErr{{notSupported, dep + "[0].state"}},
		},
		"depends-on: a bare name, not a list": {
			parser:   dependsOnParser,
			value:    "init",
			wantErrs: []fieldErr{{typeInvalid, dep}},
		},

		// sequencer.jobset-addons.io/execution-policy and wait-for
		"execution-policy: AnyOrder": {
			parser:   policyParser,
			value:    "AnyOrder",
			wantErrs: []fieldErr{{notSupported, exe}},
		},
		"execution-policy: wrong case": {
			parser:   policyParser,
			value:    "inorder",
			wantErrs: []fieldErr{{notSupported, exe}},
		},
		"execution-policy: empty": {
			parser:   policyParser,
			value:    "",
			wantErrs: []fieldErr{{required, exe}},
		},
		"wait-for: Failed": {
			parser:   waitForParser,
			value:    "Failed",
			wantErrs: []fieldErr{{notSupported, wf}},
		},
		"wait-for: empty": {
			parser:   waitForParser,
			value:    "",
			wantErrs: []fieldErr{{required, wf}},
		},

		// sequencer.jobset-addons.io/released
		"released: negative attempt": {
			parser:   releasedParser,
			value:    `{"restartAttempt":-1,"replicatedJobs":["node"]}`,
			wantErrs: []fieldErr{{invalid, rel + ".restartAttempt"}},
		},
		"released: ReplicatedJob repeated": {
			parser:   releasedParser,
			value:    `{"replicatedJobs":["a","b","a"]}`,
			wantErrs: []fieldErr{{duplicate, rel + ".replicatedJobs[2]"}},
		},
		"released: name as a number": {
			parser:   releasedParser,
			value:    `{"replicatedJobs":["a",2]}`,
			wantErrs: []fieldErr{{typeInvalid, rel + ".replicatedJobs[1]"}},
		},

		// podgroups.jobset-addons.io/scheduler
		"scheduler: unknown scheduler": {
			parser:   schedulerParser,
			value:    "kube-batch",
			wantErrs: []fieldErr{{notSupported, sch}},
		},
		"scheduler: wrong case": {
			parser:   schedulerParser,
			value:    "Volcano",
			wantErrs: []fieldErr{{notSupported, sch}},
		},

		// podgroups.jobset-addons.io/network-topology
		"network-topology: mode not hard or soft": {
			parser:   topologyParser,
			value:    "mode: strict",
			wantErrs: []fieldErr{{notSupported, ntp + ".mode"}},
		},
		"network-topology: tier 0": {
			parser:   topologyParser,
			value:    `{"mode":"hard","highestTierAllowed":0}`,
			wantErrs: []fieldErr{{invalid, ntp + ".highestTierAllowed"}},
		},
		"network-topology: tier as a string": {
			parser:   topologyParser,
			value:    `highestTierAllowed: "2"`,
			wantErrs: []fieldErr{{typeInvalid, ntp + ".highestTierAllowed"}},
		},
		"network-topology: unknown field": {
			parser:   topologyParser,
			value:    "mode: soft\nhighestTierName: spine\n",
			wantErrs: []fieldErr{{notSupported, ntp + ".highestTierName"}},
		},
		"network-topology: a list, not an object": {
			parser:   topologyParser,
			value:    "[hard]",
			wantErrs: []fieldErr{{typeInvalid, ntp}},
		},
		"network-topology: empty": {
			parser:   topologyParser,
			value:    "",
			wantErrs: []fieldErr{{required, ntp}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := tc.parser.parse(tc.value, tc.parser.path)
			if diff := cmp.Diff(tc.wantErrs, errsOf(errs)); diff != "" {
				t.Errorf("errors (-want +got):\n%s\ngot: %v", diff, errs.ToAggregate())
			}
		})
	}
}
