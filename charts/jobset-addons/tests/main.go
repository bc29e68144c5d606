// Command tests checks the renders of the jobset-addons chart that hack/chart-verify.sh writes.
//
//	go run . check DIR             check every DIR/<mode>_<controllers>.yaml
//	go run . check-webhooks DIR    check the webhook configurations rendered from testdata/_webhooks.tpl
//	go run . check-kind FILE       check the render of hack/kind/values.yaml (make e2e-kind)
//	go run . check-rules FILE RULES  the render's PrometheusRule holds the rule file RULES
//	go run . strip-group G IN OUT  copy the render IN to OUT without the objects of API group G
//
// A render's file name says what it was rendered with: <mode> is the chart's
// certManagement.mode (self-signed or cert-manager) and <controllers> the enabled controllers
// joined by "+", or "none". For example cert-manager_volumeclaims+podgroups.yaml.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

const namespace = "jobset-addons-system"

// imageRE is what every controller image must be: a tag always (the chart's appVersion when
// none is set), and a digest too when values.yaml pins one (a released chart pins all).
var imageRE = regexp.MustCompile(`^[a-z0-9.:/_-]+:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}(@sha256:[0-9a-f]{64})?$`)

var controllers = []string{"volumeclaims", "resourceclaims", "sequencer", "podgroups"}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(args []string) error {
	switch {
	case len(args) == 2 && args[0] == "check":
		return checkDir(args[1])
	case len(args) == 2 && args[0] == "check-webhooks":
		return checkWebhooksDir(args[1])
	case len(args) == 2 && args[0] == "check-kind":
		problems, err := checkKindFile(args[1])
		if err == nil && len(problems) > 0 {
			err = fmt.Errorf("%s:\n  %s", args[1], strings.Join(problems, "\n  "))
		}
		if err == nil {
			fmt.Printf("%s: images, webhook Services and certificates fit kind\n", args[1])
		}
		return err
	case len(args) == 3 && args[0] == "check-rules":
		return checkRulesFile(args[1], args[2])
	case len(args) == 4 && args[0] == "strip-group":
		return stripGroup(args[1], args[2], args[3])
	}
	return errors.New("usage: tests check DIR | tests check-webhooks DIR | tests check-kind FILE | tests check-rules FILE RULES | tests strip-group GROUP IN OUT")
}

// doc is one object of a render: its YAML and what identifies it.
type doc struct {
	raw        []byte
	apiVersion string
	kind       string
	name       string
	namespace  string
	labels     map[string]string
}

func (d doc) group() string {
	if g, _, ok := strings.Cut(d.apiVersion, "/"); ok {
		return g
	}
	return ""
}

func (d doc) String() string { return d.kind + "/" + d.name }

// splitRender splits helm template output into its objects, skipping empty documents.
func splitRender(data []byte) ([]doc, error) {
	var docs []doc
	for i, part := range bytes.Split(append([]byte("\n"), data...), []byte("\n---")) {
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string            `json:"name"`
				Namespace string            `json:"namespace"`
				Labels    map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(part, &meta); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if meta.Kind == "" && meta.APIVersion == "" {
			continue // comments only
		}
		docs = append(docs, doc{
			raw: part, apiVersion: meta.APIVersion, kind: meta.Kind,
			name: meta.Metadata.Name, namespace: meta.Metadata.Namespace, labels: meta.Metadata.Labels,
		})
	}
	return docs, nil
}

func stripGroup(group, in, out string) error {
	data, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	docs, err := splitRender(data)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	var buf bytes.Buffer
	var dropped []string
	for _, d := range docs {
		if d.group() == group {
			dropped = append(dropped, d.String())
			continue
		}
		buf.WriteString("---")
		buf.Write(d.raw)
		buf.WriteString("\n")
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Printf("%d %s\n", len(dropped), strings.Join(dropped, " "))
	return nil
}

func checkDir(dir string) error { return forEachRender(dir, checkFile) }

func checkWebhooksDir(dir string) error { return forEachRender(dir, checkWebhooksFile) }

func forEachRender(dir string, check func(string) ([]string, error)) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no renders in %s", dir)
	}
	failed := 0
	for _, f := range files {
		problems, err := check(f)
		if err != nil {
			problems = append(problems, err.Error())
		}
		if len(problems) > 0 {
			failed++
			fmt.Printf("FAIL %s\n", filepath.Base(f))
			for _, p := range problems {
				fmt.Printf("     %s\n", p)
			}
		}
	}
	fmt.Printf("%d renders checked, %d failed\n", len(files), failed)
	if failed > 0 {
		return fmt.Errorf("%d of %d renders failed the checks", failed, len(files))
	}
	return nil
}

// combo is what a render was made with, read from its file name.
type combo struct {
	mode    string
	enabled []string
}

func parseName(file string) (combo, error) {
	base := strings.TrimSuffix(filepath.Base(file), ".yaml")
	mode, list, ok := strings.Cut(base, "_")
	if !ok || (mode != "self-signed" && mode != "cert-manager") {
		return combo{}, fmt.Errorf("file name %q is not <self-signed|cert-manager>_<controllers|none>.yaml", base)
	}
	c := combo{mode: mode}
	if list != "none" {
		for _, n := range strings.Split(list, "+") {
			if !slices.Contains(controllers, n) {
				return combo{}, fmt.Errorf("file name %q: unknown controller %q", base, n)
			}
			c.enabled = append(c.enabled, n)
		}
	}
	return c, nil
}

// checker collects the problems of one render.
type checker struct {
	problems []string
}

func (c *checker) errorf(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// readRender reads one render: what its file name says was enabled, and its documents.
func readRender(file string) (combo, []doc, error) {
	want, err := parseName(file)
	if err != nil {
		return want, nil, err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return want, nil, err
	}
	docs, err := splitRender(data)
	return want, docs, err
}

func checkFile(file string) ([]string, error) {
	want, docs, err := readRender(file)
	if err != nil {
		return nil, err
	}
	c := &checker{}
	c.checkRender(want, docs)
	return c.problems, nil
}

func fullname(n string) string { return "jobset-addons-" + n }

func namesOf(docs []doc, kind string) []string {
	var out []string
	for _, d := range docs {
		if d.kind == kind {
			out = append(out, d.name)
		}
	}
	sort.Strings(out)
	return out
}

// controllersWithWebhooks have a mutating and a validating webhook configuration in the chart.
var controllersWithWebhooks = map[string]bool{"volumeclaims": true, "resourceclaims": true, "sequencer": true, "podgroups": true}

func expected(enabled []string, suffixes ...string) []string {
	var out []string
	for _, n := range enabled {
		for _, s := range suffixes {
			out = append(out, fullname(n)+s)
		}
	}
	sort.Strings(out)
	return out
}

func (c *checker) checkRender(want combo, docs []doc) {
	if len(want.enabled) == 0 {
		if n := namesOf(docs, "Deployment"); len(n) > 0 {
			c.errorf("every controller is off but the render has Deployments %v", n)
		}
		for _, d := range docs {
			c.errorf("every controller is off but the render has %s", d)
		}
		return
	}

	// Exactly the enabled controllers have each kind of object.
	for _, k := range []struct {
		kind     string
		suffixes []string
	}{
		{"Deployment", []string{""}},
		{"ServiceAccount", []string{""}},
		{"Role", []string{""}},
		{"RoleBinding", []string{""}},
		{"ClusterRole", []string{""}},
		{"ClusterRoleBinding", []string{""}},
		{"Service", []string{"-webhook", "-metrics"}},
	} {
		if got, exp := namesOf(docs, k.kind), expected(want.enabled, k.suffixes...); !slices.Equal(got, exp) {
			c.errorf("%s objects: got %v, want %v", k.kind, got, exp)
		}
	}
	if want.mode == "cert-manager" {
		if got, exp := namesOf(docs, "Certificate"), expected(want.enabled, "-webhook"); !slices.Equal(got, exp) {
			c.errorf("Certificates: got %v, want %v", got, exp)
		}
		if got := namesOf(docs, "Issuer"); !slices.Equal(got, []string{"jobset-addons-selfsigned"}) {
			c.errorf("Issuers: got %v, want [jobset-addons-selfsigned]", got)
		}
		if got := namesOf(docs, "Secret"); len(got) > 0 {
			c.errorf("cert-manager mode renders Secrets %v: cert-manager creates them", got)
		}
	} else {
		for _, d := range docs {
			if d.group() == "cert-manager.io" {
				c.errorf("self-signed mode renders %s", d)
			}
		}
		if got, exp := namesOf(docs, "Secret"), expected(want.enabled, "-webhook-cert"); !slices.Equal(got, exp) {
			c.errorf("Secrets: got %v, want %v", got, exp)
		}
	}
	// A webhook configuration of each kind for each enabled controller that has webhooks.
	var hooked []string
	for _, n := range want.enabled {
		if controllersWithWebhooks[n] {
			hooked = append(hooked, n)
		}
	}
	for _, k := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		if got, exp := namesOf(docs, k), expected(hooked, ""); !slices.Equal(got, exp) {
			c.errorf("%s objects %v, want %v", k, got, exp)
		}
	}

	c.checkPolicies(want, docs)

	roles := map[string]bool{}
	for _, d := range docs {
		c.checkMeta(d, want)
		switch d.kind {
		case "Role", "ClusterRole":
			var r rbacv1.ClusterRole // a Role has the same fields
			if c.decode(d, &r) {
				roles[d.kind+"/"+d.name] = true
				c.checkRules(d, r.Rules)
			}
		}
	}
	c.checkPermissions(want, docs)
	for _, d := range docs {
		switch d.kind {
		case "Deployment":
			var dep appsv1.Deployment
			if c.decode(d, &dep) {
				c.checkDeployment(d, &dep, want, docs)
			}
		case "Service":
			var svc corev1.Service
			if c.decode(d, &svc) {
				c.checkService(d, &svc)
			}
		case "RoleBinding", "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding // a RoleBinding has the same fields
			if c.decode(d, &b) {
				c.checkBinding(d, b.RoleRef, b.Subjects, roles)
			}
		case "ServiceAccount":
			var sa corev1.ServiceAccount
			if c.decode(d, &sa) && (sa.AutomountServiceAccountToken == nil || !*sa.AutomountServiceAccountToken) {
				c.errorf("%s: automountServiceAccountToken is not true", d)
			}
		case "Secret":
			var s corev1.Secret
			if c.decode(d, &s) && (len(s.Data) > 0 || len(s.StringData) > 0) {
				c.errorf("%s: has data, want it empty for cert-controller to fill", d)
			}
		case "MutatingWebhookConfiguration":
			c.decode(d, &admissionregistrationv1.MutatingWebhookConfiguration{})
		case "ValidatingWebhookConfiguration":
			c.decode(d, &admissionregistrationv1.ValidatingWebhookConfiguration{})
		case "Certificate":
			c.checkCertificate(d)
		case "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
			c.checkPolicy(d)
		case "Issuer", "Role", "ClusterRole": // Roles checked above
		default:
			c.errorf("%s: unexpected kind", d)
		}
	}
}

// decode reads d into obj strictly: a field the API does not have is a problem.
func (c *checker) decode(d doc, obj any) bool {
	if err := yaml.UnmarshalStrict(d.raw, obj); err != nil {
		c.errorf("%s: %v", d, err)
		return false
	}
	return true
}

var clusterScoped = map[string]bool{
	"ClusterRole": true, "ClusterRoleBinding": true,
	"MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
}

func (c *checker) checkMeta(d doc, want combo) {
	if clusterScoped[d.kind] {
		if d.namespace != "" {
			c.errorf("%s: cluster-scoped but has namespace %q", d, d.namespace)
		}
	} else if d.namespace != namespace {
		c.errorf("%s: namespace %q, want %q", d, d.namespace, namespace)
	}
	for k, v := range map[string]string{
		"app.kubernetes.io/name":       "jobset-addons",
		"app.kubernetes.io/instance":   "jsa",
		"app.kubernetes.io/managed-by": "Helm",
		"app.kubernetes.io/part-of":    "jobset-addons",
	} {
		if d.labels[k] != v {
			c.errorf("%s: label %s=%q, want %q", d, k, d.labels[k], v)
		}
	}
	if d.labels["app.kubernetes.io/version"] == "" {
		c.errorf("%s: no label app.kubernetes.io/version", d)
	}
	if d.kind == "Issuer" {
		return // shared by every controller
	}
	comp := d.labels["app.kubernetes.io/component"]
	if !slices.Contains(want.enabled, comp) {
		c.errorf("%s: component label %q is not an enabled controller", d, comp)
	} else if !strings.HasPrefix(d.name, fullname(comp)) {
		c.errorf("%s: name does not start with %s, its component", d, fullname(comp))
	}
}

func (c *checker) checkRules(d doc, rules []rbacv1.PolicyRule) {
	for i, r := range rules {
		if len(r.Verbs) == 0 || len(r.Resources) == 0 || len(r.APIGroups) == 0 {
			c.errorf("%s: rule %d lacks apiGroups, resources or verbs", d, i)
		}
		if slices.Contains(r.Verbs, "*") || slices.Contains(r.Resources, "*") {
			c.errorf("%s: rule %d uses a wildcard", d, i)
		}
	}
}

func (c *checker) checkBinding(d doc, ref rbacv1.RoleRef, subjects []rbacv1.Subject, roles map[string]bool) {
	if !roles[ref.Kind+"/"+ref.Name] {
		c.errorf("%s: roleRef %s/%s is not in the render", d, ref.Kind, ref.Name)
	}
	want := rbacv1.Subject{Kind: "ServiceAccount", Name: d.name, Namespace: namespace}
	if len(subjects) != 1 || subjects[0] != want {
		c.errorf("%s: subjects %+v, want [%+v]", d, subjects, want)
	}
}

func (c *checker) checkService(d doc, svc *corev1.Service) {
	comp := d.labels["app.kubernetes.io/component"]
	wantPort := map[string]int32{"-webhook": 443, "-metrics": 8080}[strings.TrimPrefix(d.name, fullname(comp))]
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != wantPort {
		c.errorf("%s: ports %+v, want one port %d", d, svc.Spec.Ports, wantPort)
	}
	if svc.Spec.Selector["app.kubernetes.io/component"] != comp {
		c.errorf("%s: selector %v does not select component %s", d, svc.Spec.Selector, comp)
	}
}

func (c *checker) checkCertificate(d doc) {
	var cert struct {
		Spec struct {
			SecretName string   `json:"secretName"`
			DNSNames   []string `json:"dnsNames"`
			IssuerRef  struct {
				Kind string `json:"kind"`
				Name string `json:"name"`
			} `json:"issuerRef"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(d.raw, &cert); err != nil {
		c.errorf("%s: %v", d, err)
		return
	}
	comp := d.labels["app.kubernetes.io/component"]
	if want := fullname(comp) + "-webhook-cert"; cert.Spec.SecretName != want {
		c.errorf("%s: secretName %q, want %q", d, cert.Spec.SecretName, want)
	}
	if want := fullname(comp) + "-webhook." + namespace + ".svc"; !slices.Contains(cert.Spec.DNSNames, want) {
		c.errorf("%s: dnsNames %v lack %s", d, cert.Spec.DNSNames, want)
	}
	if cert.Spec.IssuerRef.Kind != "Issuer" || cert.Spec.IssuerRef.Name != "jobset-addons-selfsigned" {
		c.errorf("%s: issuerRef %+v, want Issuer jobset-addons-selfsigned", d, cert.Spec.IssuerRef)
	}
}

func (c *checker) checkDeployment(d doc, dep *appsv1.Deployment, want combo, docs []doc) {
	name := d.labels["app.kubernetes.io/component"]
	pod := dep.Spec.Template.Spec
	if dep.Spec.Selector == nil {
		c.errorf("%s: no selector", d)
	} else {
		for k, v := range dep.Spec.Selector.MatchLabels {
			if dep.Spec.Template.Labels[k] != v {
				c.errorf("%s: selector %s=%s does not match the pod template's labels", d, k, v)
			}
		}
	}
	if pod.ServiceAccountName != fullname(name) {
		c.errorf("%s: serviceAccountName %q, want %q", d, pod.ServiceAccountName, fullname(name))
	}
	if pod.AutomountServiceAccountToken == nil || !*pod.AutomountServiceAccountToken {
		c.errorf("%s: automountServiceAccountToken is not true", d)
	}
	if len(pod.Containers) != 1 {
		c.errorf("%s: %d containers, want 1", d, len(pod.Containers))
		return
	}
	ctr := pod.Containers[0]
	where := fmt.Sprintf("%s container %s", d, ctr.Name)
	if !imageRE.MatchString(ctr.Image) {
		c.errorf("%s: image %q is not repository:tag or repository:tag@sha256:<64 hex>", where, ctr.Image)
	}

	// Security: the container's own securityContext, or the pod's where the container says nothing.
	psc := pod.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	sc := ctr.SecurityContext
	if sc == nil {
		sc = &corev1.SecurityContext{}
	}
	runAsNonRoot := sc.RunAsNonRoot
	if runAsNonRoot == nil {
		runAsNonRoot = psc.RunAsNonRoot
	}
	seccomp := sc.SeccompProfile
	if seccomp == nil {
		seccomp = psc.SeccompProfile
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		c.errorf("%s: readOnlyRootFilesystem is not true", where)
	}
	if runAsNonRoot == nil || !*runAsNonRoot {
		c.errorf("%s: runAsNonRoot is not true", where)
	}
	if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		c.errorf("%s: seccompProfile is not RuntimeDefault", where)
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		c.errorf("%s: allowPrivilegeEscalation is not false", where)
	}
	if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		c.errorf("%s: capabilities do not drop ALL", where)
	}
	if len(ctr.Resources.Requests) == 0 {
		c.errorf("%s: no resources.requests", where)
	}

	// Arguments the binary needs to find its objects.
	certMode := map[string]string{"self-signed": "self-signed", "cert-manager": "external"}[want.mode]
	for _, arg := range []string{
		"--leader-election-id=" + name + ".jobset-addons.io",
		"--cert-mode=" + certMode,
		"--cert-dir=/tmp/k8s-webhook-server/serving-certs",
		"--cert-secret-name=" + fullname(name) + "-webhook-cert",
		"--webhook-service-name=" + fullname(name) + "-webhook",
		"--webhook-configuration-name=" + fullname(name),
		"--webhook-port=9443",
	} {
		if !slices.Contains(ctr.Args, arg) {
			c.errorf("%s: args lack %s", where, arg)
		}
	}
	env := false
	for _, e := range ctr.Env {
		if e.Name == "POD_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
			e.ValueFrom.FieldRef.FieldPath == "metadata.namespace" {
			env = true
		}
	}
	if !env {
		c.errorf("%s: no POD_NAMESPACE from metadata.namespace", where)
	}

	// Ports the Services and probes name.
	ports := map[string]int32{}
	for _, p := range ctr.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for n, p := range map[string]int32{"metrics": 8080, "health": 8081, "webhook": 9443} {
		if ports[n] != p {
			c.errorf("%s: port %s is %d, want %d", where, n, ports[n], p)
		}
	}
	for probe, path := range map[*corev1.Probe]string{ctr.LivenessProbe: "/healthz", ctr.ReadinessProbe: "/readyz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path || probe.HTTPGet.Port.String() != "health" {
			c.errorf("%s: no probe GET %s on port health", where, path)
		}
	}

	// The certificate directory: the certificate Secret, read-only, in both modes. cert-controller
	// writes no files; it fills the Secret and waits for the kubelet to project it.
	var mount *corev1.VolumeMount
	for i := range ctr.VolumeMounts {
		if ctr.VolumeMounts[i].MountPath == "/tmp/k8s-webhook-server/serving-certs" {
			mount = &ctr.VolumeMounts[i]
		}
	}
	if mount == nil {
		c.errorf("%s: nothing mounted at the cert dir", where)
		return
	}
	var vol *corev1.Volume
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == mount.Name {
			vol = &pod.Volumes[i]
		}
	}
	switch {
	case vol == nil:
		c.errorf("%s: volume %s is not in the pod", d, mount.Name)
	case vol.Secret == nil || vol.Secret.SecretName != fullname(name)+"-webhook-cert" || !mount.ReadOnly:
		c.errorf("%s: cert dir is not Secret %s-webhook-cert mounted read-only", d, fullname(name))
	}

	// Services select this Deployment's pods.
	for _, o := range docs {
		if o.kind != "Service" || o.labels["app.kubernetes.io/component"] != name {
			continue
		}
		var svc corev1.Service
		if err := yaml.Unmarshal(o.raw, &svc); err != nil {
			continue
		}
		for k, v := range svc.Spec.Selector {
			if dep.Spec.Template.Labels[k] != v {
				c.errorf("%s: selector %s=%s does not select the pods of %s", o, k, v, d)
			}
		}
		for _, p := range svc.Spec.Ports {
			if _, ok := ports[p.TargetPort.String()]; !ok {
				c.errorf("%s: targetPort %s is not a port of %s", o, p.TargetPort.String(), d)
			}
		}
	}
}
