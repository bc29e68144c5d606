package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// BenchmarkPodWebhookOverTLS sends AdmissionReviews for a pod to the Pod webhook served the way
// controller-runtime serves it (admission.Webhook, TLS, HTTP/2), at 100 requests/s for 5 s,
// and reports the exact p50 and p99 of the round trips: the add-on's share of the apiserver's
// webhook latency, without the apiserver.
func BenchmarkPodWebhookOverTLS(b *testing.B) {
	ts := httptest.NewUnstartedServer(&admission.Webhook{Handler: &PodWebhook{}})
	ts.EnableHTTP2 = true
	ts.StartTLS()
	defer ts.Close()
	c := ts.Client()
	p := pod("hybrid-training", "trainer", 2, 5, "worker-scratch").Obj()
	raw, err := json.Marshal(p)
	if err != nil {
		b.Fatal(err)
	}
	review := func(i int) []byte {
		r := admissionv1.AdmissionReview{}
		r.APIVersion, r.Kind = "admission.k8s.io/v1", "AdmissionReview"
		r.Request = &admissionv1.AdmissionRequest{
			UID: types.UID(time.Now().String()), Operation: admissionv1.Create, Namespace: "default",
		}
		r.Request.Object.Raw = raw
		out, _ := json.Marshal(r)
		return out
	}
	const rate, n = 100, 500
	for b.Loop() {
		var mu sync.Mutex
		var lat []time.Duration
		var wg sync.WaitGroup
		tick := time.NewTicker(time.Second / rate)
		for i := range n {
			<-tick.C
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := review(i)
				start := time.Now()
				resp, err := c.Post(ts.URL, "application/json", bytes.NewReader(body))
				if err != nil {
					b.Error(err)
					return
				}
				_ = resp.Body.Close()
				d := time.Since(start)
				if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
					b.Errorf("status %d over %s", resp.StatusCode, resp.Proto)
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}()
		}
		tick.Stop()
		wg.Wait()
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	}
}
