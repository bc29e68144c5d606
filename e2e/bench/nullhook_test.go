package bench

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gomodules.xyz/jsonpatch/v2"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/jobset-addons/jobset-addons/e2e/testbed"
)

// addonArgs are more arguments for the add-on under test, from $BENCH_ADDON_ARGS (for example
// --pprof-bind-address=127.0.0.1:6060, to profile it during a run).
func addonArgs() []string { return strings.Fields(os.Getenv("BENCH_ADDON_ARGS")) }

// nullLabel marks the objects the null webhook admits.
const nullLabel = "bench.jobset-addons.io/null"

// nullWebhookName is the null webhook, for the apiserver's latency histogram.
const nullWebhookName = "null.bench.jobset-addons.io"

// nullWebhook serves, from the bench process, a mutating webhook that admits every object with a
// label added: controller-runtime's admission handler over TLS on 127.0.0.1, as the add-ons serve
// theirs. It is registered for CREATE of resource (group/version), for objects labelled
// nullLabel. Its latency, measured as the add-on's is and in the same run, is the floor of the
// testbed: the apiserver's webhook call, TLS, HTTP/2, and the decoding of the review.
func nullWebhook(ctx context.Context, b *testing.B, cs kubernetes.Interface, tb testbed.Config, group, version, resource string) {
	dir := filepath.Join(tb.WorkDir, "bench-null")
	caPEM, err := testbed.ServingCert(dir)
	if err != nil {
		b.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	mux := http.NewServeMux()
	// It answers with a one-operation JSON patch, as the add-ons' webhooks do: the apiserver's
	// cost of applying a patch (encoding the object, patching, decoding it) is part of every
	// mutating webhook's latency, and of the floor.
	mux.Handle("/null", &admission.Webhook{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.Patched("", jsonpatch.NewOperation("add", "/metadata/labels/bench.jobset-addons.io~1patched", "true"))
	})})
	srv := &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	b.Cleanup(func() { _ = srv.Close() })

	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "jobset-addons-bench-null"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    nullWebhookName,
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://" + ln.Addr().String() + "/null"), CABundle: caPEM},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource}}}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{nullLabel: "true"}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](5),
		}},
	}
	_ = cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, cfg.Name, metav1.DeleteOptions{})
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), cfg.Name, metav1.DeleteOptions{})
	})
}
