package main

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestExplain: explain prints an add-on's annotations, an annotation's type, documentation and
// fields, a field's type, enum and documentation, from pkg/contract's doc comments; a path that
// names nothing is an error that lists what there is.
func TestExplain(t *testing.T) {
	for name, tc := range map[string]struct {
		path      string
		want      string   // the whole output, when set
		wantLines []string // lines the output has
		wantErr   string
	}{
		"a field of an enum type": {path: "volumeclaims.policies.retentionPolicy.whenComplete", want: `ANNOTATION: volumeclaims.jobset-addons.io/policies
ON:         the JobSet (metadata.annotations)

FIELD: whenComplete <string>
ENUM: Delete, Retain

DESCRIPTION:
    WhenComplete applies once the JobSet (or all targets) completed. Default
    Retain.

    RetentionPolicyType says what happens to created objects (PVCs,
    ResourceClaims) at an event.
`},
		"an add-on": {path: "sequencer", wantLines: []string{"ADD-ON: sequencer", "  execution-policy\t<string>", "    enum: InOrder",
			"  depends-on\t<[]Dependency>", "    sequencer.jobset-addons.io/depends-on, on each ReplicatedJob's Job template", "  start-barrier-timeout\t<string>"}},
		"a structured annotation": {path: "sequencer.depends-on", wantLines: []string{"FIELD: depends-on <[]Dependency>", "FIELDS:", "  name\t<string>",
			"  status\t<string>", "    enum: Complete, Ready", "    Dependency is one predecessor of a ReplicatedJob: an entry of the"}},
		"a Kubernetes type": {path: "resourceclaims.templates.spec", wantLines: []string{"FIELD: spec <ResourceClaimSpec>",
			"    a Kubernetes ResourceClaimSpec (k8s.io/api/resource/v1): see kubectl explain"}},
		"no such add-on":          {path: "volumes", wantErr: `no add-on "volumes": one of volumeclaims, resourceclaims, sequencer, podgroups`},
		"no such annotation":      {path: "podgroups.queue", wantErr: `podgroups has no annotation "queue": one of scheduler, queue-name, network-topology, topology-key, composite, schedule-timeout-seconds`},
		"no such field":           {path: "volumeclaims.policies.retention", wantErr: `volumeclaims.policies has no field "retention": its fields are targetReplicatedJobs, templates, retentionPolicy`},
		"below a Kubernetes type": {path: "volumeclaims.policies.templates.spec", wantErr: `volumeclaims.policies.templates has no field "spec": it is a Kubernetes PersistentVolumeClaim (k8s.io/api/core/v1): see kubectl explain persistentvolumeclaim`},
	} {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Explain([]string{tc.path}, &out, &errOut)
			if tc.wantErr != "" {
				if code != 1 || errOut.String() != "kubectl jobset-addons explain: "+tc.wantErr+"\n" {
					t.Errorf("exit %d, stderr %q; want 1 and %q", code, errOut.String(), tc.wantErr)
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			if tc.want != "" {
				if diff := cmp.Diff(tc.want, out.String()); diff != "" {
					t.Errorf("output (-want +got):\n%s", diff)
				}
			}
			for _, l := range tc.wantLines {
				if !strings.Contains(out.String(), l+"\n") && !strings.Contains(out.String(), l) {
					t.Errorf("output has no line %q:\n%s", l, out.String())
				}
			}
		})
	}
}

// TestExplainDocumented: every annotation explain knows has its key's documentation, and so do
// its type and every field of it in pkg/contract: a key or field added without a doc comment,
// or docs not regenerated (make docs), fails here.
func TestExplainDocumented(t *testing.T) {
	for _, a := range annotations {
		if contract.KeyDoc(a.key) == "" {
			t.Errorf("%s.%s: %s has no documentation", a.addOn, a.name, a.key)
		}
		todo := []reflect.Type{a.typ}
		for len(todo) > 0 {
			st := structOf(todo[0])
			todo = todo[1:]
			if st == nil || st.PkgPath() != contractPkg {
				continue
			}
			if contract.Doc(st.Name()) == "" {
				t.Errorf("%s.%s: type %s has no documentation", a.addOn, a.name, st.Name())
			}
			for _, n := range jsonNames(st) {
				f, _ := jsonField(st, n)
				todo = append(todo, f.Type)
				if contract.Doc(st.Name()+"."+n) == "" {
					t.Errorf("%s.%s: field %s.%s has no documentation", a.addOn, a.name, st.Name(), n)
				}
			}
		}
	}
}
