package volumeclaims

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

func TestNodeLostGrace(t *testing.T) {
	path := AnnotationPath.Index(0)
	cases := map[string]struct {
		grace     *metav1.Duration
		wantErrs  []string
		wantGrace time.Duration
	}{
		"default":              {nil, nil, contract.DefaultVolumeNodeLostGracePeriod},
		"the minimum":          {&metav1.Duration{Duration: 30 * time.Second}, nil, 30 * time.Second},
		"longer":               {&metav1.Duration{Duration: time.Hour}, nil, time.Hour},
		"below: refused":       {&metav1.Duration{Duration: 10 * time.Second}, []string{path.String() + ".retentionPolicy.nodeLostGracePeriod"}, 30 * time.Second},
		"zero: refused":        {&metav1.Duration{}, []string{path.String() + ".retentionPolicy.nodeLostGracePeriod"}, 30 * time.Second},
		"negative: the parser": {&metav1.Duration{Duration: -time.Second}, nil, 30 * time.Second},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &contract.VolumeClaimPolicy{RetentionPolicy: contract.VolumeRetentionPolicy{NodeLostGracePeriod: tc.grace}}
			var got []string
			for _, e := range validateNodeLostGrace(p, path, sets.New(path.String()+".retentionPolicy.other")) {
				if e.Type != field.ErrorTypeInvalid {
					t.Errorf("error type %s, want Invalid", e.Type)
				}
				got = append(got, e.Field)
			}
			if diff := cmp.Diff(tc.wantErrs, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if g := NodeLostGrace(p.RetentionPolicy); g != tc.wantGrace {
				t.Errorf("NodeLostGrace = %v, want %v (never below the minimum)", g, tc.wantGrace)
			}
		})
	}
}
