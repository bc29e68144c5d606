package kindbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Kubeflow Trainer on kind (InstallTrainer), installed only by the cases that run TrainJobs.
const (
	// TrainerNamespace is where Trainer's own manifests put its controller manager.
	TrainerNamespace = "kubeflow-system"
	// TrainerImage is Trainer's controller manager built by ko from tools/trainer
	// (hack/kind/images.sh): its manifests' image is renamed to it.
	TrainerImage = "kind.local/trainer:e2e"
	// trainerManifestImage is the image Trainer's manifests name.
	trainerManifestImage = "ghcr.io/kubeflow/trainer/trainer-controller-manager"
)

// trainerKustomization installs Trainer as its own manifests/overlays/manager does, from the
// module's manifests/base (base: its path relative to the kustomization, which kustomize
// requires): the CRDs, the controller manager with its Configuration (its own certificate
// management on: it makes the webhook Secret and puts its CA into the webhook configurations),
// its RBAC and its webhook configurations. Not the overlay's third-party JobSet: JobSet is
// installed already.
func trainerKustomization(base string) string {
	return fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: %[2]s
resources:
- %[1]s/crds
- %[1]s/manager
- %[1]s/rbac
- %[1]s/webhook
images:
- name: %[3]s
  newName: %[4]s
  newTag: %[5]s
secretGenerator:
- name: kubeflow-trainer-webhook-cert
  options: {disableNameSuffixHash: true}
`, base, TrainerNamespace, trainerManifestImage, TrainerImage[:strings.LastIndex(TrainerImage, ":")], TrainerImage[strings.LastIndex(TrainerImage, ":")+1:])
}

// InstallTrainer loads Trainer's image into the cluster and installs Trainer (c.TrainerSource,
// the tools/trainer module's directory) beside JobSet, then returns once a TrainJob reaches its
// validating webhook. It is idempotent: a kept cluster is brought to the manifests as they are.
func InstallTrainer(ctx context.Context, c Config, log func(string, ...any)) error {
	if c.TrainerSource == "" {
		return errors.New("TRAINER_SRC is not set (make e2e-kind sets it)")
	}
	start := time.Now()
	if _, err := c.run(ctx, nil, c.KindBin, "load", "docker-image", "--name", c.Name, TrainerImage); err != nil {
		return err
	}
	log("%s loaded in %s", TrainerImage, time.Since(start).Round(100*time.Millisecond))
	dir := filepath.Join(c.WorkDir, c.Name+"-trainer")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	base, err := filepath.Rel(dir, filepath.Join(c.TrainerSource, "manifests", "base"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(trainerKustomization(base)), 0o644); err != nil {
		return err
	}
	manifests, err := c.run(ctx, nil, c.KubectlBin, "kustomize", dir)
	if err != nil {
		return err
	}
	ns := "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + TrainerNamespace + "}\n---\n"
	if _, err := c.Kubectl(ctx, append([]byte(ns), manifests...), "apply", "--server-side", "--force-conflicts", "-f", "-"); err != nil {
		return err
	}
	if _, err := c.Kubectl(ctx, nil, "-n", TrainerNamespace, "rollout", "status", "deploy/kubeflow-trainer-controller-manager", "--timeout=180s"); err != nil {
		return err
	}
	if err := c.waitTrainerWebhooks(ctx); err != nil {
		return err
	}
	log("Trainer installed and its webhooks answering in %s", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// trainerProbe is a TrainJob naming a runtime that does not exist: Trainer's validating webhook
// refuses it (and nothing else does). Created with --dry-run=server: nothing is stored.
const trainerProbe = `apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: kindbed-probe, namespace: default}
spec: {runtimeRef: {name: kindbed-probe-no-such-runtime, apiGroup: trainer.kubeflow.org, kind: TrainingRuntime}}
`

// waitTrainerWebhooks waits until the API server reaches Trainer's webhooks through their
// Service, with the CA Trainer's certificate management put into their configurations.
func (c Config) waitTrainerWebhooks(ctx context.Context) error {
	return c.waitDryRun(ctx, "Trainer's webhooks still do not answer 2m after its install", trainerProbe, func(err error) bool {
		return err != nil && strings.Contains(err.Error(), "kindbed-probe-no-such-runtime") && strings.Contains(err.Error(), "validator.trainjob.trainer.kubeflow.org")
	})
}
