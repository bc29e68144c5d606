package framework

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// TrainerAPIVersion is the API of Kubeflow Trainer's TrainJobs and runtimes.
const TrainerAPIVersion = "trainer.kubeflow.org/v1alpha1"

// TrainingRuntimeFrom reads the TrainingRuntime of file into namespace ns, then edits its spec.
func TrainingRuntimeFrom(t *testing.T, file, ns string, edit func(spec map[string]any)) *unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetNamespace(ns)
	if edit != nil {
		edit(u.Object["spec"].(map[string]any))
	}
	return u
}

// TrainJob is a TrainJob of the TrainingRuntime runtime.
func TrainJob(ns, name, runtime string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": TrainerAPIVersion, "kind": "TrainJob",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"runtimeRef": map[string]any{
			"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime", "name": runtime,
		}},
	}}
}

// CreateTrainJob creates the runtime rt, then the TrainJob tj, and reads tj back. Trainer's
// TrainJob webhook reads the runtime from its informer's cache, and refuses a TrainJob whose
// runtime it has not seen yet ("specified trainingRuntime must be created before the TrainJob is
// created"): the TrainJob is created again, for up to 30 s, until the cache has the runtime.
func CreateTrainJob(ctx context.Context, t *testing.T, c client.Client, rt, tj *unstructured.Unstructured) {
	t.Helper()
	CreateAll(ctx, t, c, rt)
	Eventually(ctx, t, 30*time.Second, "TrainJob "+tj.GetName()+" created", func(ctx context.Context) (bool, string, error) {
		err := c.Create(ctx, tj.DeepCopy())
		if err != nil && strings.Contains(err.Error(), "must be created before the TrainJob is created") {
			return false, err.Error(), nil
		}
		return true, "", err
	})
	if err := c.Get(ctx, client.ObjectKeyFromObject(tj), tj); err != nil {
		t.Fatal(err)
	}
}

// WaitTrainJob waits up to timeout until the TrainJob has the condition cond (Complete,
// Failed) True.
func WaitTrainJob(ctx context.Context, t *testing.T, c client.Client, tj *unstructured.Unstructured, cond string, timeout time.Duration) {
	t.Helper()
	Eventually(ctx, t, timeout, fmt.Sprintf("TrainJob %s %s", tj.GetName(), cond), func(ctx context.Context) (bool, string, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(tj), tj); err != nil {
			return false, err.Error(), nil
		}
		conds, _, _ := unstructured.NestedSlice(tj.Object, "status", "conditions")
		for _, x := range conds {
			if m, _ := x.(map[string]any); m["type"] == cond && m["status"] == "True" {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("conditions %v", conds), nil
	})
}
