package contract

import (
	"go/ast"
	goparser "go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// decoderTarget exercises what the decoder must handle like encoding/json: embedded structs
// (promoted or named), maps, pointers, json:"-" and untagged fields.
type decoderTarget struct {
	inner  `json:",inline"`
	Named  inner             `json:"named"`
	Map    map[string]inner  `json:"map"`
	Ptr    *int              `json:"ptr"`
	Skip   string            `json:"-"`
	Plain  string            // untagged: decoded as "Plain"
	Labels map[string]string `json:"labels"`
}

type inner struct {
	A int    `json:"a"`
	B string `json:"b,omitempty"`
}

func TestDecodeStrict(t *testing.T) {
	root := field.NewPath("x")
	cases := map[string]struct {
		value     string
		want      decoderTarget
		wantErrs  []fieldErr
		wantValue any // BadValue of the first error, when set
	}{
		"promoted, named, map and pointer fields": {
			value: `{"a":1,"named":{"b":"x"},"map":{"k.io/v":{"a":2}},"ptr":3,"Plain":"p"}`,
			want:  decoderTarget{inner: inner{A: 1}, Named: inner{B: "x"}, Map: map[string]inner{"k.io/v": {A: 2}}, Ptr: ptrTo(3), Plain: "p"},
		},
		"same in YAML": {
			value: "a: 1\nnamed: {b: x}\nmap:\n  k.io/v: {a: 2}\nptr: 3\nPlain: p\n",
			want:  decoderTarget{inner: inner{A: 1}, Named: inner{B: "x"}, Map: map[string]inner{"k.io/v": {A: 2}}, Ptr: ptrTo(3), Plain: "p"},
		},
		"nulls": {
			value: `{"named":null,"map":null,"ptr":null,"labels":null}`,
		},
		"errors in map values and skipped fields, all reported": {
			value: `{"map":{"k":{"a":"one"},"j":{"c":1}},"Skip":"no","plain":"case matters","labels":{"a":1}}`,
			want:  decoderTarget{Map: map[string]inner{"k": {}, "j": {}}, Labels: map[string]string{"a": ""}},
			wantErrs: []fieldErr{
				{typeInvalid, "x.map[k].a"},
				{notSupported, "x.map[j].c"},
				{notSupported, "x.Skip"},
				{notSupported, "x.plain"},
				{typeInvalid, "x.labels[a]"},
			},
			wantValue: "one",
		},
		"repeated map key": {
			value:    `{"labels":{"a":"1","a":"2"}}`,
			want:     decoderTarget{Labels: map[string]string{"a": "2"}},
			wantErrs: []fieldErr{{duplicate, "x.labels[a]"}},
		},
		"float for an integer": {
			value:     `{"ptr":1.5}`,
			want:      decoderTarget{Ptr: ptrTo(0)},
			wantErrs:  []fieldErr{{typeInvalid, "x.ptr"}},
			wantValue: 1.5,
		},
		"list for an object": {
			value:     `{"named":[1]}`,
			wantErrs:  []fieldErr{{typeInvalid, "x.named"}},
			wantValue: field.OmitValueType{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got decoderTarget
			errs := decodeStrict(tc.value, root, &got)
			if diff := cmp.Diff(tc.wantErrs, errsOf(errs)); diff != "" {
				t.Errorf("errors (-want +got):\n%s\ngot: %v", diff, errs.ToAggregate())
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(decoderTarget{})); diff != "" {
				t.Errorf("value (-want +got):\n%s", diff)
			}
			if tc.wantValue != nil && len(errs) > 0 {
				if diff := cmp.Diff(tc.wantValue, errs[0].BadValue); diff != "" {
					t.Errorf("BadValue (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestAppendJSONPath(t *testing.T) {
	cases := map[string]struct {
		path string
		want string
	}{
		"fields":           {"a.b", "x.a.b"},
		"index then field": {"[0].a", "x[0].a"},
		"field then index": {"a[2].b", "x.a[2].b"},
		"map key":          {"m[key]", "x.m[key]"},
		"empty":            {"", "x"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := appendJSONPath(field.NewPath("x"), tc.path).String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestKeys checks every exported key and value constant of keys.go: keys are qualified names,
// each has a doc comment, and README.md names it, so that the table of rules cannot drift.
func TestKeys(t *testing.T) {
	fset := token.NewFileSet()
	file, err := goparser.ParseFile(fset, "keys.go", nil, goparser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]string{
		"ManagedByLabelKey": ManagedByLabelKey, "JobSetNameLabelKey": JobSetNameLabelKey, "JobSetUIDLabelKey": JobSetUIDLabelKey,
		"ReplicatedJobNameLabelKey": ReplicatedJobNameLabelKey, "JobIndexLabelKey": JobIndexLabelKey,
		"RestartAttemptAnnotationKey": RestartAttemptAnnotationKey, "RestartAttemptLabelKey": RestartAttemptLabelKey,
		"JobCompletionIndexAnnotationKey": JobCompletionIndexAnnotationKey, "JobCompletionIndexLabelKey": JobCompletionIndexLabelKey,
		"PoliciesAnnotationKey": PoliciesAnnotationKey, "VolumeClaimTemplateLabelKey": VolumeClaimTemplateLabelKey,
		"VolumeClaimReplicatedJobLabelKey": VolumeClaimReplicatedJobLabelKey, "VolumeClaimJobIndexLabelKey": VolumeClaimJobIndexLabelKey,
		"VolumeClaimPodIndexLabelKey": VolumeClaimPodIndexLabelKey, "VolumeClaimsPerPodLabelKey": VolumeClaimsPerPodLabelKey, "VolumeClaimsPerPodVolumesAnnotationKey": VolumeClaimsPerPodVolumesAnnotationKey, "VolumeClaimsSharedVolumesAnnotationKey": VolumeClaimsSharedVolumesAnnotationKey, "VolumeClaimsPlaceholderClaimName": VolumeClaimsPlaceholderClaimName, "VolumeClaimJobSetUIDAnnotationKey": VolumeClaimJobSetUIDAnnotationKey,
		"VolumeClaimExpireAfterUnusedAnnotationKey": VolumeClaimExpireAfterUnusedAnnotationKey, "VolumeClaimClaimedAtAnnotationKey": VolumeClaimClaimedAtAnnotationKey, "VolumeClaimUnusedSinceAnnotationKey": VolumeClaimUnusedSinceAnnotationKey, "VolumeClaimFirstSeenAnnotationKey": VolumeClaimFirstSeenAnnotationKey,
		"VolumeClaimsAdmittedAnnotationKey": VolumeClaimsAdmittedAnnotationKey, "TemplatesAnnotationKey": TemplatesAnnotationKey,
		"ResourceClaimTemplateLabelKey": ResourceClaimTemplateLabelKey, "ResourceClaimsRetryAnnotationKey": ResourceClaimsRetryAnnotationKey, "PodGroupsRetryAnnotationKey": PodGroupsRetryAnnotationKey,
		"ExecutionPolicyAnnotationKey": ExecutionPolicyAnnotationKey, "WaitForAnnotationKey": WaitForAnnotationKey,
		"DependsOnAnnotationKey": DependsOnAnnotationKey, "ReleasedAnnotationKey": ReleasedAnnotationKey,
		"SequencerSchedulingGateValue": SequencerSchedulingGateValue, "SequencerGatedLabelKey": SequencerGatedLabelKey,
		"StartBarrierAnnotationKey": StartBarrierAnnotationKey, "StartBarrierTimeoutAnnotationKey": StartBarrierTimeoutAnnotationKey,
		"StartBarrierOpenedAnnotationKey": StartBarrierOpenedAnnotationKey, "StartBarrierLabelKey": StartBarrierLabelKey,
		"StartBarrierStateAnnotationKey": StartBarrierStateAnnotationKey, "StartBarrierNudgeAnnotationKey": StartBarrierNudgeAnnotationKey, "StartBarrierContainerName": StartBarrierContainerName,
		"KueueQueueNameLabelKey": KueueQueueNameLabelKey,
		"SchedulerAnnotationKey": SchedulerAnnotationKey, "VolcanoQueueNameAnnotationKey": VolcanoQueueNameAnnotationKey,
		"NetworkTopologyAnnotationKey": NetworkTopologyAnnotationKey, "VolcanoGroupNameAnnotationKey": VolcanoGroupNameAnnotationKey, "VolcanoTaskSpecAnnotationKey": VolcanoTaskSpecAnnotationKey,
		"CoschedulingPodGroupLabelKey": CoschedulingPodGroupLabelKey, "PodGroupStageLabelKey": PodGroupStageLabelKey,
		"KAIPodGroupAnnotationKey": KAIPodGroupAnnotationKey, "KAISubGroupLabelKey": KAISubGroupLabelKey, "KAIQueueLabelKey": KAIQueueLabelKey,
		"ScheduleTimeoutAnnotationKey": ScheduleTimeoutAnnotationKey, "PodGroupSpecHashAnnotationKey": PodGroupSpecHashAnnotationKey,
		"TopologyKeyAnnotationKey": TopologyKeyAnnotationKey,
		"CompositeAnnotationKey":   CompositeAnnotationKey, "PerJobPodGroupAnnotationKey": PerJobPodGroupAnnotationKey,
		"GangAnnotationKey":          GangAnnotationKey,
		"VolumeClaimsManagedByValue": VolumeClaimsManagedByValue, "ResourceClaimsManagedByValue": ResourceClaimsManagedByValue,
		"SequencerManagedByValue": SequencerManagedByValue, "PodGroupsManagedByValue": PodGroupsManagedByValue,
		"EnabledValue": EnabledValue, "Domain": Domain, "JobSetControllerManagedBy": JobSetControllerManagedBy,
	}
	seen := 0
	for _, decl := range file.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for _, id := range vs.Names {
				name := id.Name
				seen++
				value, known := values[name]
				if !known {
					t.Errorf("%s: add it to this test", name)
					continue
				}
				if vs.Doc == nil && gd.Doc == nil {
					t.Errorf("%s has no doc comment", name)
				}
				if !strings.Contains(string(readme), name) {
					t.Errorf("README.md does not name %s", name)
				}
				if strings.HasSuffix(name, "Key") || name == "SequencerSchedulingGateValue" {
					if msgs := validation.IsQualifiedName(value); len(msgs) > 0 {
						t.Errorf("%s = %q is not a qualified name: %v", name, value, msgs)
					}
					if !strings.Contains(string(readme), "`"+value+"`") {
						t.Errorf("README.md does not show %s's value %q", name, value)
					}
				}
			}
		}
	}
	if seen != len(values) {
		t.Errorf("keys.go declares %d constants, the test knows %d", seen, len(values))
	}
}
