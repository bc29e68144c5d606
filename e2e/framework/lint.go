package framework

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	"github.com/jobset-addons/jobset-addons/e2e/repo"
)

// ourWebhook matches a refusal by one of the add-ons' JobSet webhooks.
var ourWebhook = regexp.MustCompile(`admission webhook "[mv]jobset\.(volumeclaims|resourceclaims|sequencer|podgroups)\.jobset-addons\.io" denied the request`)

// needsCluster tells whether a cause of a refusal is one kubectl jobset-addons lint cannot
// find offline, as its help says: what the namespace's quota, LimitRanges, Pod Security and
// admission policies decide, the namespace's labels (a device's admin access), which CRDs,
// APIs and feature gates the cluster serves ("this cluster..."), and the controllers'
// configuration (the schedulers' names).
func needsCluster(c metav1.StatusCause) bool {
	for _, s := range []string{"ValidatingAdmissionPolicy", "exceeded quota", "LimitRange", "PodSecurity", "on the containing namespace", "this cluster"} {
		if strings.Contains(c.Message, s) {
			return true
		}
	}
	return strings.HasSuffix(c.Field, ".schedulerName")
}

// ExpectLintAgrees runs kubectl jobset-addons lint (bin/kubectl-jobset_addons, `make build`) on
// obj, which one of the add-ons' webhooks refused with err, and fails the test unless lint
// refuses it at every path the webhook did, but those of causes that need the cluster
// (needsCluster): a webhook that gains an offline check lint lacks fails here, on every bad
// JobSet the suites send. Objects of other kinds, and refusals by others' webhooks, are left
// alone.
func ExpectLintAgrees(t *testing.T, obj client.Object, err error) {
	t.Helper()
	js, ok := obj.(*jobsetv1alpha2.JobSet)
	var status apierrors.APIStatus
	if !ok || !errors.As(err, &status) || status.Status().Details == nil || !ourWebhook.MatchString(err.Error()) {
		return
	}
	c := js.DeepCopy()
	c.APIVersion, c.Kind = jobsetv1alpha2.GroupVersion.String(), "JobSet"
	c.ResourceVersion, c.UID, c.ManagedFields = "", "", nil
	manifest, merr := yaml.Marshal(c)
	if merr != nil {
		t.Fatal(merr)
	}
	root, rerr := repo.Root()
	if rerr != nil {
		t.Fatal(rerr)
	}
	cmd := exec.Command(filepath.Join(root, "bin", "kubectl-jobset_addons"), "lint", "-o", "json", "-f", "-")
	cmd.Stdin = bytes.NewReader(manifest)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	var exit *exec.ExitError
	if runErr != nil && (!errors.As(runErr, &exit) || exit.ExitCode() != 1) {
		t.Fatalf("kubectl jobset-addons lint: %v\n%s", runErr, stderr.String())
	}
	var findings []struct {
		Field   string `json:"field"`
		Warning bool   `json:"warning"`
	}
	if jerr := json.Unmarshal(out, &findings); jerr != nil {
		t.Fatalf("kubectl jobset-addons lint -o json: %v\n%s", jerr, out)
	}
	var refused []string
	for _, f := range findings {
		if !f.Warning {
			refused = append(refused, f.Field)
		}
	}
	for _, cause := range status.Status().Details.Causes {
		if !needsCluster(cause) && !slices.Contains(refused, cause.Field) {
			t.Errorf("kubectl jobset-addons lint does not refuse %s (%s), which the webhook refused; lint refused %q\n%s", cause.Field, cause.Message, refused, manifest)
		}
	}
}
