package kindbed

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestWithJobSetGates renders JobSet's own manifests (the module's config/default, as install
// does) and checks that its controller's Configuration turns on every alpha gate.
func TestWithJobSetGates(t *testing.T) {
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/jobset").Output()
	if err != nil {
		t.Fatalf("sigs.k8s.io/jobset not in the module cache: %v", err)
	}
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		root, _ := filepath.Abs("../..")
		matches, _ := filepath.Glob(filepath.Join(root, "bin", "kube-*", "kubectl"))
		if len(matches) == 0 {
			t.Fatal("no kubectl to render JobSet's kustomization with: make testbed-bins builds one into bin/kube-*/")
		}
		kubectl = matches[0]
	}
	rendered, err := exec.Command(kubectl, "kustomize", filepath.Join(strings.TrimSpace(string(dir)), "config", "default")).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v", err)
	}
	out, err := withJobSetGates(rendered)
	if err != nil {
		t.Fatal(err)
	}
	var cfg string
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var cm struct {
			Kind     string                `json:"kind"`
			Metadata struct{ Name string } `json:"metadata"`
			Data     map[string]string     `json:"data"`
		}
		if yaml.Unmarshal([]byte(doc), &cm) == nil && cm.Kind == "ConfigMap" && cm.Metadata.Name == jobSetConfigMap {
			cfg = cm.Data[jobSetConfigKey]
		}
	}
	var parsed struct {
		Kind         string          `json:"kind"`
		FeatureGates map[string]bool `json:"featureGates"`
	}
	if err := yaml.Unmarshal([]byte(cfg), &parsed); err != nil {
		t.Fatalf("the Configuration does not parse: %v\n%s", err, cfg)
	}
	for _, g := range []string{"ElasticJobSet", "InPlaceRestart", "RestartJob"} {
		if !parsed.FeatureGates[g] {
			t.Errorf("gate %s not on in JobSet's Configuration:\n%s", g, cfg)
		}
	}
	if parsed.Kind != "Configuration" {
		t.Errorf("kind %q, want Configuration:\n%s", parsed.Kind, cfg)
	}
}
