package main

import (
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// recordsPolicies are the ValidatingAdmissionPolicies (and their bindings, of the same name)
// that keep the records of each controller that writes records on JobSets.
var recordsPolicies = map[string]string{"sequencer": "jobset-addons-sequencer-records"}

// checkPolicies: exactly the enabled controllers that keep records have their records policy
// and its binding (the optional policies of admissionPolicies are off in these renders).
func (c *checker) checkPolicies(want combo, docs []doc) {
	var exp []string
	for _, n := range want.enabled {
		if p, ok := recordsPolicies[n]; ok {
			exp = append(exp, p)
		}
	}
	slices.Sort(exp)
	for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		if got := namesOf(docs, kind); !slices.Equal(got, exp) {
			c.errorf("%s objects %v, want %v", kind, got, exp)
		}
	}
}

// checkPolicy: a policy fails closed and names who it exempts; a binding denies and names its
// policy.
func (c *checker) checkPolicy(d doc) {
	switch d.kind {
	case "ValidatingAdmissionPolicy":
		var p admissionregistrationv1.ValidatingAdmissionPolicy
		if !c.decode(d, &p) {
			return
		}
		if p.Spec.FailurePolicy == nil || *p.Spec.FailurePolicy != admissionregistrationv1.Fail {
			c.errorf("%s: failurePolicy is not Fail", d)
		}
		if len(p.Spec.Validations) == 0 || len(p.Spec.MatchConditions) == 0 {
			c.errorf("%s: want validations and a matchCondition on the user", d)
		}
	case "ValidatingAdmissionPolicyBinding":
		var b admissionregistrationv1.ValidatingAdmissionPolicyBinding
		if !c.decode(d, &b) {
			return
		}
		if b.Spec.PolicyName != d.name || !slices.Equal(b.Spec.ValidationActions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) {
			c.errorf("%s: want policy %s and validationActions [Deny], got %s %v", d, d.name, b.Spec.PolicyName, b.Spec.ValidationActions)
		}
	}
}
