package kindbed

import (
	"bytes"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/jobset-addons/jobset-addons/e2e/repo"
)

// jobSetConfigMap is the ConfigMap of JobSet's manifests (config/default, namePrefix jobset-)
// that holds the controller's Configuration, and its key.
const (
	jobSetConfigMap = "jobset-manager-config"
	jobSetConfigKey = "controller_manager_config.yaml"
)

// withJobSetGates returns JobSet's rendered manifests with every alpha gate of
// repo.JobSetAlphaGates turned on in the controller's Configuration, as on the testbed: the
// manifests as released turn none on.
func withJobSetGates(manifests []byte) ([]byte, error) {
	docs := bytes.Split(manifests, []byte("\n---\n"))
	found := false
	for i, doc := range docs {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &obj); err != nil || obj.Kind != "ConfigMap" || obj.Metadata.Name != jobSetConfigMap {
			continue
		}
		var cm map[string]any
		if err := yaml.Unmarshal(doc, &cm); err != nil {
			return nil, fmt.Errorf("JobSet's ConfigMap %s: %w", jobSetConfigMap, err)
		}
		data, _ := cm["data"].(map[string]any)
		cfg, ok := data[jobSetConfigKey].(string)
		if !ok {
			return nil, fmt.Errorf("JobSet's ConfigMap %s has no %s", jobSetConfigMap, jobSetConfigKey)
		}
		if strings.Contains(cfg, "featureGates:") {
			return nil, fmt.Errorf("JobSet's %s sets featureGates already; merge %v into it", jobSetConfigKey, repo.JobSetAlphaGates)
		}
		data[jobSetConfigKey] = strings.TrimRight(cfg, "\n") + "\n" + repo.JobSetFeatureGatesYAML()
		out, err := yaml.Marshal(cm)
		if err != nil {
			return nil, err
		}
		docs[i], found = out, true
	}
	if !found {
		return nil, fmt.Errorf("JobSet's manifests have no ConfigMap %s to turn its gates on in", jobSetConfigMap)
	}
	return bytes.Join(docs, []byte("\n---\n")), nil
}
