package main

import (
	"fmt"
	"os"
	"reflect"

	"sigs.k8s.io/yaml"
)

// checkRulesFile checks that the PrometheusRule of the render file holds, as its spec, exactly
// the rule file alerts (files/alerts.yaml): the chart's alerts are those promtool tests.
func checkRulesFile(file, alerts string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	docs, err := splitRender(data)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(alerts)
	if err != nil {
		return err
	}
	var want map[string]any
	if err := yaml.Unmarshal(raw, &want); err != nil {
		return fmt.Errorf("%s: %w", alerts, err)
	}
	found := 0
	for _, d := range docs {
		if d.kind != "PrometheusRule" {
			continue
		}
		found++
		var rule struct {
			Spec map[string]any `json:"spec"`
		}
		if err := yaml.Unmarshal(d.raw, &rule); err != nil {
			return fmt.Errorf("%s: %s: %w", file, d, err)
		}
		if !reflect.DeepEqual(rule.Spec, want) {
			return fmt.Errorf("%s: %s's spec is not %s", file, d, alerts)
		}
	}
	if found != 1 {
		return fmt.Errorf("%s: %d PrometheusRules, want 1", file, found)
	}
	fmt.Printf("%s: the PrometheusRule holds %s\n", file, alerts)
	return nil
}
