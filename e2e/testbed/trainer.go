package testbed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// TrainerVersion is the Kubeflow Trainer the testbed runs beside JobSet (`testbedctl trainer`)
// when bin/testbed names none: github.com/kubeflow/trainer/v2 at this version, built by
// `make trainer-bins` from the wrapper module tools/trainer into bin/trainer-<version>/, with
// its CRDs and webhook configuration copied from the module's manifests/base. `make trainer-bins
// NEIGHBOURS=old` builds the older one of the compatibility matrix (tools/trainer-v2.1.0) and
// names it in bin/testbed/trainer-version, which Config.TrainerVersion reads.
const TrainerVersion = "v2.3.0"

// TrainerVersion is the Trainer the testbed runs: the version in BinDir's trainer-version (make
// trainer-bins writes it), else the package's TrainerVersion.
func (c Config) TrainerVersion() string {
	if b, err := os.ReadFile(c.Bin("trainer-version")); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b))
	}
	return TrainerVersion
}

// TrainerPorts of the Trainer controller on the testbed, on 127.0.0.1.
type TrainerPorts struct{ Webhook, Health, Metrics int }

// TrainerPorts derives the Trainer's ports from PortBase.
func (c Config) TrainerPorts() TrainerPorts {
	b := c.PortBase + 490
	return TrainerPorts{Webhook: b, Health: b + 1, Metrics: b + 2}
}

// All lists the Trainer's ports, for the check that teardown left none listening.
func (p TrainerPorts) All() []int { return []int{p.Webhook, p.Health, p.Metrics} }

// TrainerBinDir is where `make trainer-bins` puts the Trainer's binary and manifests:
// TESTBED_TRAINER_DIR, else Root/bin/trainer-<c.TrainerVersion()>.
func (c Config) TrainerBinDir() string {
	if d := os.Getenv("TESTBED_TRAINER_DIR"); d != "" {
		return d
	}
	return filepath.Join(c.Root, "bin", "trainer-"+c.TrainerVersion())
}

func (c Config) trainerDir() string { return filepath.Join(c.WorkDir, "trainer") }

// trainerCRDs are the CustomResourceDefinitions of the Trainer (manifests/base/crds).
var trainerCRDs = []string{
	"trainjobs.trainer.kubeflow.org", "trainingruntimes.trainer.kubeflow.org", "clustertrainingruntimes.trainer.kubeflow.org",
}

// StartTrainer runs Kubeflow Trainer's controller manager (TrainerVersion) as a process of the
// testbed, as StartJobSet runs JobSet's: its CRDs applied from its module, its webhooks served
// on 127.0.0.1 with a certificate made here (its own certificate management off), its webhook
// configuration registered with the local URL in place of its Service, leader election off. It
// runs with the testbed's admin kubeconfig. The gang schedulers' PodGroup CRDs are installed
// first: Trainer's coscheduling and Volcano plugins watch those kinds. Down stops it.
func StartTrainer(ctx context.Context, c Config, log func(string, ...any)) error {
	bins := c.TrainerBinDir()
	manager := filepath.Join(bins, "trainer-controller-manager")
	for _, f := range []string{manager, filepath.Join(bins, "crds"), filepath.Join(bins, "webhooks.yaml")} {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("%s is missing: run `make trainer-bins` first", f)
		}
	}
	if err := InstallGangCRDs(ctx, c); err != nil {
		return err
	}
	rc, err := c.RESTConfig()
	if err != nil {
		return err
	}
	if err := run(ctx, c, "kubectl", "--kubeconfig", c.Kubeconfig(), "apply", "--server-side", "--force-conflicts", "-f", filepath.Join(bins, "crds")); err != nil {
		return err
	}
	for _, n := range trainerCRDs {
		if err := waitCRDEstablished(ctx, rc, n); err != nil {
			return err
		}
	}
	p := c.TrainerPorts()
	dir := c.trainerDir()
	// controller-runtime's webhook server reads its certificate from
	// $TMPDIR/k8s-webhook-server/serving-certs: the Trainer's Configuration has no certDir.
	tmp := filepath.Join(dir, "tmp")
	certDir := filepath.Join(tmp, "k8s-webhook-server", "serving-certs")
	health := fmt.Sprintf("http://127.0.0.1:%d/readyz", p.Health)
	if httpOK(ctx, health) {
		log("Trainer is already running")
	} else {
		if _, err := ServingCert(certDir); err != nil {
			return fmt.Errorf("making the Trainer's webhook certificate: %w", err)
		}
		cfg := fmt.Sprintf(`apiVersion: config.trainer.kubeflow.org/v1alpha1
kind: Configuration
health:
  healthProbeBindAddress: 127.0.0.1:%d
  readinessEndpointName: readyz
  livenessEndpointName: healthz
metrics:
  bindAddress: 127.0.0.1:%d
  secureServing: false
webhook:
  host: 127.0.0.1
  port: %d
leaderElection:
  leaderElect: false
certManagement:
  enable: false
clientConnection:
  qps: 500
  burst: 500
`, p.Health, p.Metrics, p.Webhook)
		cfgPath := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
			return err
		}
		env, err := exec.LookPath("env")
		if err != nil {
			return err
		}
		logPath, err := StartProcess(c, "trainer", env, "TMPDIR="+tmp, "KUBECONFIG="+c.Kubeconfig(), manager, "--config", cfgPath, "--kubeconfig", c.Kubeconfig())
		if err != nil {
			return err
		}
		if err := WaitHTTP(ctx, health, time.Minute); err != nil {
			return fmt.Errorf("the Trainer did not become ready: %w; see %s", err, logPath)
		}
	}
	caPEM, err := os.ReadFile(filepath.Join(certDir, "ca.crt"))
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(bins, "webhooks.yaml"))
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	if err := RegisterWebhooks(ctx, cs, raw, fmt.Sprintf("https://127.0.0.1:%d", p.Webhook), caPEM, WebhookEdits{Prefix: "trainer-"}); err != nil {
		return err
	}
	if err := waitTrainerWebhooks(ctx, cs); err != nil {
		return err
	}
	log("Trainer %s is ready: webhooks on :%d, health on :%d, log in %s", c.TrainerVersion(), p.Webhook, p.Health, filepath.Join(c.procsDir(), "trainer.log"))
	return nil
}

// waitTrainerWebhooks returns once the apiserver reaches the Trainer's webhooks: a dry-run
// create of a TrainJob naming a runtime that does not exist is refused by the Trainer's
// validator (and by nothing else).
func waitTrainerWebhooks(ctx context.Context, cs kubernetes.Interface) error {
	body := []byte(`{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"probe","namespace":"default"},
"spec":{"runtimeRef":{"name":"testbed-probe-no-such-runtime","apiGroup":"trainer.kubeflow.org","kind":"TrainingRuntime"}}}`)
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		last = cs.CoreV1().RESTClient().Post().AbsPath("/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs").
			Param("dryRun", "All").SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
		// The validator answers: the runtime does not exist.
		return last != nil && strings.Contains(last.Error(), "validator.trainjob.trainer.kubeflow.org") && strings.Contains(last.Error(), "testbed-probe-no-such-runtime"), nil
	})
	if err != nil {
		return fmt.Errorf("the Trainer's webhooks do not answer (last: %v)", last)
	}
	return nil
}

// StopTrainer stops the Trainer's process and removes its webhook configuration.
func StopTrainer(ctx context.Context, c Config) error {
	return stopUnhooked(ctx, c, "trainer", func(cs kubernetes.Interface) error {
		// Trainer v2.3 has a mutating webhook too (the TrainJob defaulter); v2.1 has none.
		if err := ignoreNotFound(cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, "trainer-mutating-webhook-configuration", metav1.DeleteOptions{})); err != nil {
			return err
		}
		return ignoreNotFound(cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, "trainer-validating-webhook-configuration", metav1.DeleteOptions{}))
	})
}
