package main

import (
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// defaultPolicies are the ValidatingAdmissionPolicies (and their bindings, of the same name)
// the chart installs by default for each controller: the records policy of each controller that
// writes records on JobSets, the reserved-keys policy of each that makes objects, and the
// sequencer's dry-runs-only policy.
var defaultPolicies = map[string][]string{
	"volumeclaims":   {"jobset-addons-volumeclaims-reserved-keys"},
	"resourceclaims": {"jobset-addons-resourceclaims-reserved-keys"},
	"sequencer":      {"jobset-addons-sequencer-records", "jobset-addons-sequencer-dry-runs-only"},
	"podgroups":      {"jobset-addons-podgroups-reserved-keys"},
}

// checkPolicies: exactly the enabled controllers have their default policies and bindings (the
// optional policies of admissionPolicies are off in these renders).
func (c *checker) checkPolicies(want combo, docs []doc) {
	var exp []string
	for _, n := range want.enabled {
		exp = append(exp, defaultPolicies[n]...)
	}
	slices.Sort(exp)
	for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		if got := namesOf(docs, kind); !slices.Equal(got, exp) {
			c.errorf("%s objects %v, want %v", kind, got, exp)
		}
	}
	for _, d := range docs {
		if name, ok := strings.CutSuffix(strings.TrimPrefix(d.name, "jobset-addons-"), "-reserved-keys"); ok && d.kind == "ValidatingAdmissionPolicy" {
			c.checkReservedKinds(d, name)
		}
	}
}

// checkReservedKinds: the reserved-keys policy of a controller covers, on CREATE and UPDATE,
// exactly the kinds its allowlist lets it create (but Events, and the pods the sequencer only
// dry-runs): every kind it makes, and nothing else.
func (c *checker) checkReservedKinds(d doc, name string) {
	var p admissionregistrationv1.ValidatingAdmissionPolicy
	if !c.decode(d, &p) || p.Spec.MatchConstraints == nil {
		c.errorf("%s: no matchConstraints", d)
		return
	}
	var got, want []string
	for _, r := range p.Spec.MatchConstraints.ResourceRules {
		if !slices.Equal(r.Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}) {
			c.errorf("%s: operations %v, want [CREATE UPDATE]", d, r.Operations)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				got = append(got, g+"/"+res)
			}
		}
	}
	for _, line := range allowlist[name] {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "cluster" && f[2] == "create" && !strings.HasSuffix(f[1], "/events") && f[1] != "/pods" {
			want = append(want, f[1])
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		c.errorf("%s: covers %v, want the kinds %s creates: %v", d, got, name, want)
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
