package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// allowlist is every permission each controller may have, one "SCOPE GROUP/RESOURCE VERB [NAME]"
// a line (the core group is ""). SCOPE is "cluster" for a ClusterRole's rules or the namespace
// of a Role's. {ns} is the release namespace. A render whose effective permissions differ from
// this, by one verb, resource or name either way, fails.
var allowlist = func() map[string][]string {
	common := func(name string) []string {
		fn := fullname(name)
		return []string{
			"cluster jobset.x-k8s.io/jobsets get", "cluster jobset.x-k8s.io/jobsets list", "cluster jobset.x-k8s.io/jobsets watch",
			"cluster /events create", "cluster /events patch", "cluster events.k8s.io/events create", "cluster events.k8s.io/events patch",
			"cluster admissionregistration.k8s.io/mutatingwebhookconfigurations get",
			"cluster admissionregistration.k8s.io/mutatingwebhookconfigurations list",
			"cluster admissionregistration.k8s.io/mutatingwebhookconfigurations watch",
			"cluster admissionregistration.k8s.io/mutatingwebhookconfigurations update " + fn,
			"cluster admissionregistration.k8s.io/validatingwebhookconfigurations get",
			"cluster admissionregistration.k8s.io/validatingwebhookconfigurations list",
			"cluster admissionregistration.k8s.io/validatingwebhookconfigurations watch",
			"cluster admissionregistration.k8s.io/validatingwebhookconfigurations update " + fn,
			"{ns} coordination.k8s.io/leases create",
			"{ns} coordination.k8s.io/leases get " + name + ".jobset-addons.io",
			"{ns} coordination.k8s.io/leases update " + name + ".jobset-addons.io",
			"{ns} /events create", "{ns} /events patch", "{ns} events.k8s.io/events create", "{ns} events.k8s.io/events patch",
			"{ns} /secrets get " + fn + "-webhook-cert", "{ns} /secrets list " + fn + "-webhook-cert",
			"{ns} /secrets watch " + fn + "-webhook-cert", "{ns} /secrets update " + fn + "-webhook-cert",
			"cluster batch/jobs get", "cluster batch/jobs list", "cluster batch/jobs watch",
		}
	}
	crud := func(groupResource string, verbs ...string) []string {
		var out []string
		for _, v := range verbs {
			out = append(out, "cluster "+groupResource+" "+v)
		}
		return out
	}
	own := map[string][]string{
		// pods: list those that hold PVCs retention deleted, delete the finished ones (finishedPods: Delete).
		// events: FailedCreate of Jobs, to tell pods refused because of a PVC or a claim.
		// nodes, persistentvolumes: whenNodeLost reads the node a PVC's volume is pinned to.
		"volumeclaims": slices.Concat(crud("/persistentvolumeclaims", "get", "list", "watch", "create", "patch", "delete"), crud("/pods", "list", "watch", "delete"),
			crud("/events", "list", "watch"), crud("/nodes", "get", "list", "watch"), crud("/persistentvolumes", "get", "list", "watch")),
		// jobsets patch: the retry annotation, once a claim of a refused Job's name is gone.
		"resourceclaims": slices.Concat(crud("resource.k8s.io/resourceclaims", "get", "list", "watch", "create", "patch", "delete"),
			crud("/events", "list", "watch"), crud("jobset.x-k8s.io/jobsets", "patch")),
		// pods create: the webhook's dry runs of barrier pods; events: FailedCreate of Jobs;
		// nodes: a barrier pod on a node not Ready does not count as waiting.
		"sequencer": slices.Concat(crud("jobset.x-k8s.io/jobsets", "patch"), crud("/pods", "get", "list", "watch", "patch", "create"),
			crud("/events", "list", "watch"), crud("/nodes", "get", "list", "watch")),
		// jobsets patch: the retry annotation, once another JobSet's gang object of a held Job's gang name is gone.
		"podgroups": slices.Concat(
			crud("scheduling.volcano.sh/podgroups", "get", "list", "watch", "create", "patch", "delete"),
			crud("scheduling.x-k8s.io/podgroups", "get", "list", "watch", "create", "patch", "delete"),
			crud("scheduling.run.ai/podgroups", "get", "list", "watch", "create", "patch", "delete"),
			crud("scheduling.run.ai/queues", "get"),
			crud("scheduling.k8s.io/podgroups", "get", "list", "watch", "create", "patch", "delete"),
			crud("scheduling.k8s.io/workloads", "get", "list", "watch", "create", "patch", "delete"),
			crud("scheduling.k8s.io/compositepodgroups", "get", "list", "watch", "create", "patch", "delete"),
			crud("scheduling.k8s.io/priorityclasses", "get", "list", "watch"),
			crud("jobset.x-k8s.io/jobsets", "patch")),
	}
	out := map[string][]string{}
	for _, n := range controllers {
		out[n] = append(common(n), own[n]...)
	}
	return out
}()

// never are permissions no controller may hold, whatever the allowlist says.
func forbidden(p perm, name string) string {
	switch {
	case p.group == "*" || p.resource == "*" || p.verb == "*":
		return "a wildcard"
	case slices.Contains([]string{"escalate", "bind", "impersonate"}, p.verb):
		return "verb " + p.verb
	case p.group == "" && strings.HasPrefix(p.resource, "pods/"):
		return "a pod subresource (" + p.resource + ")"
	case p.group == "" && p.resource == "secrets" && (p.scope != namespace || p.name != fullname(name)+"-webhook-cert"):
		return "Secrets other than its own webhook-certificate Secret in " + namespace
	}
	return ""
}

// perm is one verb on one resource (and name, if the rule names one) in one scope.
type perm struct{ scope, group, resource, verb, name string }

func (p perm) String() string {
	s := p.scope
	if s == namespace {
		s = "{ns}"
	}
	return strings.TrimSpace(fmt.Sprintf("%s %s/%s %s %s", s, p.group, p.resource, p.verb, p.name))
}

// expand lists the permissions of rules in scope, one per group, resource, verb and name.
func expand(scope string, rules []rbacv1.PolicyRule) []perm {
	var out []perm
	for _, r := range rules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					for _, n := range names {
						out = append(out, perm{scope, g, res, v, n})
					}
				}
			}
		}
	}
	return out
}

// checkPermissions computes, for each enabled controller, what its ServiceAccount may do from
// every binding in the render that names it, and compares that with the allowlist.
func (c *checker) checkPermissions(want combo, docs []doc) {
	roles := map[string][]rbacv1.PolicyRule{}
	type binding struct {
		scope    string
		ref      rbacv1.RoleRef
		subjects []rbacv1.Subject
	}
	var bindings []binding
	for _, d := range docs {
		switch d.kind {
		case "Role", "ClusterRole":
			var r rbacv1.ClusterRole
			if c.decode(d, &r) {
				roles[d.kind+"/"+d.name] = r.Rules
			}
		case "RoleBinding", "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			if c.decode(d, &b) {
				scope := "cluster"
				if d.kind == "RoleBinding" {
					scope = d.namespace
				}
				bindings = append(bindings, binding{scope, b.RoleRef, b.Subjects})
			}
		}
	}
	for _, name := range want.enabled {
		sa := rbacv1.Subject{Kind: "ServiceAccount", Name: fullname(name), Namespace: namespace}
		got := map[string]bool{}
		for _, b := range bindings {
			if !slices.Contains(b.subjects, sa) {
				continue
			}
			for _, p := range expand(b.scope, roles[b.ref.Kind+"/"+b.ref.Name]) {
				if why := forbidden(p, name); why != "" {
					c.errorf("%s may %s: %s", name, p, why)
				}
				got[p.String()] = true
			}
		}
		allowed := map[string]bool{}
		for _, p := range allowlist[name] {
			allowed[p] = true
		}
		if diff := permDiff(got, allowed); len(diff) > 0 {
			c.errorf("%s: effective permissions differ from the allowlist (+ granted, not allowed; - allowed, not granted):\n       %s", name, strings.Join(diff, "\n       "))
		}
	}
}

// permDiff is "+ p" for each p granted but not allowed and "- p" for each allowed but not granted.
func permDiff(got, allowed map[string]bool) []string {
	var out []string
	for p := range got {
		if !allowed[p] {
			out = append(out, "+ "+p)
		}
	}
	for p := range allowed {
		if !got[p] {
			out = append(out, "- "+p)
		}
	}
	sort.Strings(out)
	return out
}
