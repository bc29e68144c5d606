package jobsets

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
)

func TestImmutableAnnotations(t *testing.T) {
	old := addontest.JobSet("ns", "a").Annotation("a", "1").Annotation("b", "2").ReplicatedJobs(
		addontest.ReplicatedJob("x").JobAnnotation("t", "1"),
		addontest.ReplicatedJob("y"),
	)
	cases := map[string]struct {
		new    *addontest.JobSetWrapper
		keys   []string
		wantJS []string
		wantRJ []string
		rjKeys []string
	}{
		"unchanged": {
			new: old.Clone(), keys: []string{"a", "b", "c"}, rjKeys: []string{"t"},
		},
		"changed, added and removed": {
			new: addontest.JobSet("ns", "a").Annotation("a", "9").Annotation("c", "3").ReplicatedJobs(
				addontest.ReplicatedJob("x"),
				addontest.ReplicatedJob("y").JobAnnotation("t", "1"),
			),
			keys:   []string{"a", "b", "c", "d"},
			rjKeys: []string{"t"},
			wantJS: []string{"metadata.annotations[a]", "metadata.annotations[b]", "metadata.annotations[c]"},
			wantRJ: []string{"spec.replicatedJobs[0].template.metadata.annotations[t]", "spec.replicatedJobs[1].template.metadata.annotations[t]"},
		},
		"a new ReplicatedJob with the annotation": {
			new: addontest.JobSet("ns", "a").Annotation("a", "1").Annotation("b", "2").ReplicatedJobs(
				addontest.ReplicatedJob("x").JobAnnotation("t", "1"),
				addontest.ReplicatedJob("y"),
				addontest.ReplicatedJob("z").JobAnnotation("t", "1"),
			),
			rjKeys: []string{"t"},
			wantRJ: []string{"spec.replicatedJobs[2].template.metadata.annotations[t]"},
		},
		"keys not asked for": {
			new:  addontest.JobSet("ns", "a").Annotation("a", "9"),
			keys: []string{"c"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.wantJS, paths(t, ImmutableAnnotations(old.Obj(), tc.new.Obj(), tc.keys...))); diff != "" {
				t.Errorf("ImmutableAnnotations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRJ, paths(t, ImmutableReplicatedJobAnnotations(old.Obj(), tc.new.Obj(), tc.rjKeys...))); diff != "" {
				t.Errorf("ImmutableReplicatedJobAnnotations (-want +got):\n%s", diff)
			}
		})
	}
}

// paths are the fields of errs, each of which must be Forbidden as immutable.
func paths(t *testing.T, errs field.ErrorList) []string {
	t.Helper()
	var out []string
	for _, e := range errs {
		if e.Type != field.ErrorTypeForbidden || e.Detail != "is immutable" {
			t.Errorf("%s: want Forbidden \"is immutable\", got %s %q", e.Field, e.Type, e.Detail)
		}
		out = append(out, e.Field)
	}
	return out
}

func TestAnnotationChanged(t *testing.T) {
	cases := map[string]struct {
		old, new map[string]string
		want     bool
	}{
		"both absent":   {want: false},
		"same":          {old: map[string]string{"k": "v"}, new: map[string]string{"k": "v"}, want: false},
		"added empty":   {new: map[string]string{"k": ""}, want: true},
		"removed":       {old: map[string]string{"k": "v"}, want: true},
		"changed":       {old: map[string]string{"k": "v"}, new: map[string]string{"k": "w"}, want: true},
		"other changed": {old: map[string]string{"o": "v"}, new: map[string]string{"o": "w"}, want: false},
	}
	for name, tc := range cases {
		if got := AnnotationChanged(tc.old, tc.new, "k"); got != tc.want {
			t.Errorf("%s: got %v, want %v", name, got, tc.want)
		}
	}
}
