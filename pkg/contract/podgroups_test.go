package contract

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseNetworkTopology(t *testing.T) {
	cases := map[string]struct {
		value string
		want  NetworkTopology
	}{
		"empty object: mode hard, tier left to Volcano": {
			value: "{}",
			want:  NetworkTopology{Mode: NetworkTopologyHard},
		},
		"YAML, soft with a tier": {
			value: "mode: soft\nhighestTierAllowed: 2\n",
			want:  NetworkTopology{Mode: NetworkTopologySoft, HighestTierAllowed: ptrTo(2)},
		},
		"JSON, tier only": {
			value: `{"highestTierAllowed":1}`,
			want:  NetworkTopology{Mode: DefaultNetworkTopologyMode, HighestTierAllowed: ptrTo(1)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, errs := ParseNetworkTopology(tc.value, JobSetAnnotationPath(NetworkTopologyAnnotationKey))
			if len(errs) > 0 {
				t.Fatalf("unexpected errors: %v", errs.ToAggregate())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("network topology (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseTopologyKey(t *testing.T) {
	path := JobSetAnnotationPath(TopologyKeyAnnotationKey)
	for value, wantErrs := range map[string]int{
		"topology.kubernetes.io/zone": 0,
		"rack":                        0,
		"":                            1,
		"Not A Key":                   1,
		"a/b/c":                       1,
		"-rack":                       1,
	} {
		got, errs := ParseTopologyKey(value, path)
		if len(errs) != wantErrs {
			t.Errorf("%q: errors %v, want %d", value, errs, wantErrs)
		}
		for _, e := range errs {
			if e.Field != path.String() {
				t.Errorf("%q: error at %s, want %s", value, e.Field, path)
			}
		}
		if wantErrs == 0 && got != value {
			t.Errorf("%q: got %q", value, got)
		}
	}
}

func TestParseScheduleTimeout(t *testing.T) {
	path := JobSetAnnotationPath(ScheduleTimeoutAnnotationKey)
	for value, want := range map[string]int32{"1": 1, "60": 60, " 300 ": 300, "2147483647": 2147483647} {
		got, errs := ParseScheduleTimeout(value, path)
		if len(errs) > 0 || got != want {
			t.Errorf("ParseScheduleTimeout(%q) = %d, %v; want %d", value, got, errs, want)
		}
	}
	for _, value := range []string{"", "0", "-5", "1.5", "10s", "2147483648", "abc"} {
		_, errs := ParseScheduleTimeout(value, path)
		if len(errs) != 1 || errs[0].Field != path.String() {
			t.Errorf("ParseScheduleTimeout(%q): want one error at %s, got %v", value, path, errs)
		}
	}
}
