package contract

import "testing"

func TestManagedElsewhere(t *testing.T) {
	value := func(s string) *string { return &s }
	for name, tc := range map[string]struct {
		managedBy *string
		want      bool
	}{
		"unset":                     {nil, false},
		"JobSet's own controller":   {value(JobSetControllerManagedBy), false},
		"MultiKueue":                {value("kueue.x-k8s.io/multikueue"), true},
		"another controller":        {value("example.com/runner"), true},
		"empty (refused by JobSet)": {value(""), true},
	} {
		if got := ManagedElsewhere(tc.managedBy); got != tc.want {
			t.Errorf("%s: ManagedElsewhere = %v, want %v", name, got, tc.want)
		}
	}
}
