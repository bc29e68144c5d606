package addon

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ObserveReconcile records one reconcile's duration d in h, under the label value "success", or
// "error" when err is not nil. h has the one label "result".
func ObserveReconcile(h *prometheus.HistogramVec, d time.Duration, err error) {
	result := "success"
	if err != nil {
		result = "error"
	}
	h.WithLabelValues(result).Observe(d.Seconds())
}
