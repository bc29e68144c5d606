package testbed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/jobset-addons/jobset-addons/e2e/repo"
)

// startJobSet runs the upstream JobSet controller as a local process whose webhooks the
// apiserver reaches at https://127.0.0.1, with a certificate signed by a CA made here.
// Every alpha gate of JobSet v0.12.0 is on (repo.JobSetAlphaGates: ElasticJobSet, InPlaceRestart,
// RestartJob), so that the add-ons are proven beside what each does to a running JobSet (the
// gates suite). JobSet before v0.12.0 has no such gate (v0.11.0 has none; v0.10.1 and earlier
// have no featureGates in their Configuration either, and decode it strictly): there, no gate is
// written and replicatedJobs stay immutable.
func startJobSet(ctx context.Context, c Config, rc *rest.Config, log func(string, ...any)) error {
	dir := c.jobsetDir()
	p := c.Ports()
	if err := run(ctx, c, "kubectl", "--kubeconfig", c.Kubeconfig(), "apply", "--server-side", "--force-conflicts", "-f", c.Bin("jobset-crd.yaml")); err != nil {
		return err
	}
	if err := waitCRDEstablished(ctx, rc, "jobsets.jobset.x-k8s.io"); err != nil {
		return err
	}
	if jobsetReady(ctx, p.JobSetHealth) {
		log("JobSet controller is already running")
	} else {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		certDir := filepath.Join(dir, "certs")
		if _, err := ServingCert(certDir); err != nil {
			return fmt.Errorf("making JobSet's webhook certificate: %w", err)
		}
		cfg := fmt.Sprintf(`apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
internalCertManagement:
  enable: false
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
metrics:
  bindAddress: "0"
health:
  healthProbeBindAddress: 127.0.0.1:%d
leaderElection:
  leaderElect: false
clientConnection:
  qps: 500
  burst: 500
`, p.JobSetWebhook, certDir, p.JobSetHealth)
		if c.JobSetAtLeast(ElasticJobSetSince) {
			cfg += repo.JobSetFeatureGatesYAML()
		}
		cfgPath := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
			return err
		}
		logPath, err := StartProcess(c, "jobset", c.Bin("jobset"), "--config", cfgPath, "--kubeconfig", c.Kubeconfig())
		if err != nil {
			return err
		}
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			return jobsetReady(ctx, p.JobSetHealth), nil
		})
		if err != nil {
			return fmt.Errorf("the JobSet controller did not become ready; see %s", logPath)
		}
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "certs", "ca.crt"))
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	if err := registerJobSetWebhooks(ctx, c, cs, caPEM); err != nil {
		return err
	}
	return waitJobSetWebhooks(ctx, rc)
}

// ElasticJobSetSince is the first JobSet release with the feature gate ElasticJobSet (and the
// other alpha gates of repo.JobSetAlphaGates).
const ElasticJobSetSince = "v0.12.0"

// DependsOnFanInSince is the first JobSet release whose dependsOn holds several predecessors
// (up to 5): v0.8.0's CRD has maxItems 1, v0.10.1's 5; v0.9 is the release DESIGN.md names for
// the change (the module proxy here does not serve v0.9.0, so that one is not checked).
const DependsOnFanInSince = "v0.9.0"

func jobsetReady(ctx context.Context, healthPort int) bool {
	return httpOK(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort))
}

func httpOK(ctx context.Context, url string) bool {
	ok, _ := httpStatus(ctx, url)
	return ok
}

// probeClient opens a connection per probe: a kept-alive one may lead to a process that was
// killed and replaced on the same port.
var probeClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// httpStatus says whether url answers 200 within a second, and if not, what it answered: the
// error, or the status and the start of the body (a /readyz body names the failing check).
func httpStatus(ctx context.Context, url string) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return resp.StatusCode == http.StatusOK, fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
}

// WaitHTTP waits until url answers 200; its error says what url answered last.
func WaitHTTP(ctx context.Context, url string, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var ok bool
		ok, last = httpStatus(ctx, url)
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("%s did not answer 200 within %s (last: %s)", url, timeout, last)
	}
	return nil
}

// registerJobSetWebhooks installs JobSet's own webhook configurations, with the URL of the
// local process in place of the in-cluster Service, and the Pod webhooks scoped to JobSet
// pods as JobSet's kustomize patches scope them.
func registerJobSetWebhooks(ctx context.Context, c Config, cs kubernetes.Interface, caPEM []byte) error {
	raw, err := os.ReadFile(c.Bin("jobset-webhooks.yaml"))
	if err != nil {
		return err
	}
	return RegisterWebhooks(ctx, cs, raw, fmt.Sprintf("https://127.0.0.1:%d", c.Ports().JobSetWebhook), caPEM, WebhookEdits{
		Prefix: "jobset-",
		PodSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "jobset.sigs.k8s.io/jobset-name", Operator: metav1.LabelSelectorOpExists,
		}}},
	})
}

type object interface {
	GetName() string
	GetResourceVersion() string
	SetResourceVersion(string)
}

type getCreateUpdater[T object] interface {
	Get(context.Context, string, metav1.GetOptions) (T, error)
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Update(context.Context, T, metav1.UpdateOptions) (T, error)
}

// upsert creates obj, or replaces the object of that name.
func upsert[T object](ctx context.Context, c getCreateUpdater[T], obj T) error {
	cur, err := c.Get(ctx, obj.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = c.Create(ctx, obj, metav1.CreateOptions{})
	case err == nil:
		obj.SetResourceVersion(cur.GetResourceVersion())
		_, err = c.Update(ctx, obj, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("applying %s: %w", obj.GetName(), err)
	}
	return nil
}

// waitJobSetWebhooks returns once the apiserver reaches JobSet's webhooks: a server-side dry
// run of a JobSet create passes through both of them.
func waitJobSetWebhooks(ctx context.Context, rc *rest.Config) error {
	body := []byte(`{"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet","metadata":{"name":"probe","namespace":"default"},
"spec":{"replicatedJobs":[{"name":"w","replicas":1,"template":{"spec":{"template":{"spec":{"restartPolicy":"Never",
"containers":[{"name":"c","image":"busybox"}]}}}}}]}}`)
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		last = cs.RESTClient().Post().AbsPath("/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets").
			Param("dryRun", "All").SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("JobSet's webhooks do not answer: %w", errors.Join(err, last))
	}
	return nil
}

// waitCRDEstablished waits for the CustomResourceDefinition name to be Established. (kubectl
// wait fails at once on a CRD whose status has no conditions yet.)
func waitCRDEstablished(ctx context.Context, rc *rest.Config, name string) error {
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	var crd struct {
		Status struct {
			Conditions []metav1.Condition `json:"conditions"`
		} `json:"status"`
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		raw, err := cs.Discovery().RESTClient().Get().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", name).DoRaw(ctx)
		if err != nil || json.Unmarshal(raw, &crd) != nil {
			return false, nil
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == "Established" && c.Status == metav1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not Established: %w", name, err)
	}
	return nil
}
