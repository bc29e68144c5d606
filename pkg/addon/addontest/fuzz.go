// Package addontest holds test helpers every add-on's webhook tests share.
package addontest

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"
)

// Examples reads every object of kind in the YAML files of dir (multi-document files too) as
// JSON: the seed corpus of a webhook fuzzer, the same JobSets a user applies.
func Examples(tb testing.TB, dir, kind string) [][]byte {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no examples in %s: %v", dir, err)
	}
	sort.Strings(files)
	var out [][]byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		for _, doc := range bytes.Split(data, []byte("\n---")) {
			var meta struct{ Kind string }
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				tb.Fatalf("%s: %v", f, err)
			}
			if meta.Kind != kind {
				continue
			}
			js, err := yaml.YAMLToJSON(doc)
			if err != nil {
				tb.Fatalf("%s: %v", f, err)
			}
			out = append(out, js)
		}
	}
	if len(out) == 0 {
		tb.Fatalf("no %s in %s", kind, dir)
	}
	return out
}

// answerWithin is how long a webhook may take on one fuzzed request: far more than any real
// object needs, far less than the apiserver's webhook timeout.
const answerWithin = 5 * time.Second

// FuzzWebhooks fuzzes the decode path of each webhook, as the webhook server runs it: the
// fuzzer's bytes are the object of a CREATE, and the new object of an UPDATE whose old object
// is seeds[0]. No webhook may panic (panics are not recovered here, as the server would), and
// each must answer within answerWithin: allowed, or refused with an HTTP status code, with a
// response that encodes.
func FuzzWebhooks(f *testing.F, seeds [][]byte, hooks map[string]*admission.Webhook) {
	for _, s := range seeds {
		f.Add(s)
	}
	names := make([]string, 0, len(hooks))
	for n, h := range hooks {
		h.WithRecoverPanic(false)
		names = append(names, n)
	}
	sort.Strings(names)
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, n := range names {
			for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
				req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
					UID: "fuzz", Operation: op, Namespace: "default", Name: "fuzz",
				}}
				req.Object.Raw = raw
				if op == admissionv1.Update {
					req.OldObject.Raw = seeds[0]
				}
				var resp admission.Response
				done := make(chan struct{})
				go func() {
					defer close(done)
					resp = hooks[n].Handle(context.Background(), req)
				}()
				select {
				case <-done:
				case <-time.After(answerWithin):
					t.Fatalf("%s %s: no answer within %s (the apiserver gives up on a webhook after 10 s and refuses the object)", n, op, answerWithin)
				}
				if !resp.Allowed && (resp.Result == nil || resp.Result.Code < http.StatusBadRequest) {
					t.Errorf("%s %s: refused without an error code: %+v", n, op, resp.Result)
				}
			}
		}
	})
}

// JobSetScheme is a scheme that knows the JobSet types, for admission.WithDefaulter and
// admission.WithValidator.
func JobSetScheme(tb testing.TB) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := jobsetv1alpha2.AddToScheme(s); err != nil {
		tb.Fatal(err)
	}
	return s
}
