package main

import (
	"fmt"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// renderOf writes the Role, ClusterRole and bindings that grant exactly perms to name's
// ServiceAccount, as the chart would, and splits them into docs.
func renderOf(t *testing.T, name string, perms []string) []doc {
	t.Helper()
	rules := map[string][]rbacv1.PolicyRule{}
	for _, p := range perms {
		f := strings.Fields(p)
		group, resource, _ := strings.Cut(f[1], "/")
		r := rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: []string{f[2]}}
		if len(f) > 3 {
			r.ResourceNames = []string{f[3]}
		}
		rules[f[0]] = append(rules[f[0]], r)
	}
	var b strings.Builder
	for _, kind := range []string{"Role", "ClusterRole"} {
		scope, ns := "cluster", ""
		if kind == "Role" {
			scope, ns = "{ns}", namespace
		}
		meta := map[string]any{"name": fullname(name)}
		if ns != "" {
			meta["namespace"] = ns
		}
		role, err := yaml.Marshal(map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta, "rules": rules[scope]})
		if err != nil {
			t.Fatal(err)
		}
		binding, err := yaml.Marshal(map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind + "Binding", "metadata": meta,
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": fullname(name)},
			"subjects": []map[string]any{{"kind": "ServiceAccount", "name": fullname(name), "namespace": namespace}},
		})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "---\n%s---\n%s", role, binding)
	}
	docs, err := splitRender([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func TestCheckPermissions(t *testing.T) {
	allowed := allowlist["volumeclaims"]
	for _, tc := range []struct {
		name  string
		perms []string
		want  []string // substrings of the problems, in order; none = no problem
	}{
		{name: "exactly the allowlist", perms: allowed},
		{name: "a verb missing", perms: allowed[1:], want: []string{"- cluster jobset.x-k8s.io/jobsets get"}},
		{name: "an extra verb", perms: append(allowed[:len(allowed):len(allowed)], "cluster /persistentvolumeclaims update"),
			want: []string{"+ cluster /persistentvolumeclaims update"}},
		{name: "every Secret of the namespace", perms: append(allowed[:len(allowed):len(allowed)], "{ns} /secrets get"),
			want: []string{"Secrets other than its own", "+ {ns} /secrets get"}},
		{name: "another add-on's Secret", perms: append(allowed[:len(allowed):len(allowed)], "{ns} /secrets get jobset-addons-podgroups-webhook-cert"),
			want: []string{"Secrets other than its own", "+ {ns} /secrets get jobset-addons-podgroups-webhook-cert"}},
		{name: "a wildcard", perms: append(allowed[:len(allowed):len(allowed)], "cluster batch/* get"), want: []string{"a wildcard"}},
		{name: "pods/exec", perms: append(allowed[:len(allowed):len(allowed)], "cluster /pods/exec create"), want: []string{"a pod subresource (pods/exec)"}},
		{name: "impersonate", perms: append(allowed[:len(allowed):len(allowed)], "cluster /serviceaccounts impersonate"), want: []string{"verb impersonate"}},
		{name: "escalate", perms: append(allowed[:len(allowed):len(allowed)], "cluster rbac.authorization.k8s.io/clusterroles escalate"), want: []string{"verb escalate"}},
		{name: "bind", perms: append(allowed[:len(allowed):len(allowed)], "cluster rbac.authorization.k8s.io/clusterroles bind"), want: []string{"verb bind"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &checker{}
			c.checkPermissions(combo{mode: "self-signed", enabled: []string{"volumeclaims"}}, renderOf(t, "volumeclaims", tc.perms))
			all := strings.Join(c.problems, "\n")
			if len(tc.want) == 0 && len(c.problems) > 0 {
				t.Fatalf("problems:\n%s", all)
			}
			if len(tc.want) > 0 && len(c.problems) == 0 {
				t.Fatalf("no problem, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("problems lack %q:\n%s", w, all)
				}
			}
		})
	}
}
