package addon

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// ReconcileDuration is a histogram of one reconcile's duration, API calls included, by result
// (ObserveReconcile): name is its full name (jobset_addons_<add-on>_reconcile_duration_seconds),
// what names the reconcile ("JobSet") in its help, smallest is its smallest bucket (15 buckets,
// each twice the one before). The caller registers it.
func ReconcileDuration(name, what string, smallest float64) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    name,
		Help:    "Time of one " + what + " reconcile, API calls included, by result (success, error).",
		Buckets: prometheus.ExponentialBuckets(smallest, 2, 15),
	}, []string{"result"})
}

// The metrics every add-on shares (docs/metrics.md). Run registers them with the label addon
// (Options.Name) on controller-runtime's registry; before that (unit tests) they count unseen.
var (
	objects = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_objects_total",
		Help: "Objects the add-on wrote for JobSets, by kind and action (created, updated, deleted, failed: a create, update or delete the API server did not take).",
	}, []string{"kind", "action"})
	refusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_webhook_refusals_total",
		Help: "Requests the add-on's webhooks refused, by webhook (jobset, job, pod) and reason (the first cause's type, such as FieldValueInvalid; else the status reason, such as Forbidden; else error).",
	}, []string{"webhook", "reason"})
	dryRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_webhook_dry_runs_total",
		Help: "Server-side dry runs the JobSet webhook made of the objects the add-on would make, by verdict (accepted, refused, unsure).",
	}, []string{"verdict"})
	leader = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "jobset_addons_leader",
		Help: "1 when this replica is the add-on's leader (it reconciles), else 0.",
	})
)

// Object actions of CountObject.
const (
	ActionCreated = "created"
	ActionUpdated = "updated"
	ActionDeleted = "deleted"
	ActionFailed  = "failed"
)

var actions = []string{ActionCreated, ActionUpdated, ActionDeleted, ActionFailed}

// CountObject counts n objects of kind (PersistentVolumeClaim, ...) the add-on wrote with
// action (ActionCreated, ...) in jobset_addons_objects_total.
func CountObject(kind, action string, n int) {
	objects.WithLabelValues(kind, action).Add(float64(n))
}

// registerMetrics registers the shared metrics for the add-on name, and every series of the
// kinds it writes at 0, so that a rate() over them works before the first write.
func registerMetrics(reg prometheus.Registerer, name string, kinds []string) error {
	reg = prometheus.WrapRegistererWith(prometheus.Labels{"addon": name}, reg)
	for _, c := range []prometheus.Collector{objects, refusals, dryRuns, leader} {
		if err := reg.Register(c); err != nil && !errors.As(err, &prometheus.AlreadyRegisteredError{}) {
			return err
		}
	}
	for _, k := range kinds {
		for _, a := range actions {
			objects.WithLabelValues(k, a)
		}
	}
	for _, v := range []Verdict{Accepted, Refused, Unsure} {
		dryRuns.WithLabelValues(v.String())
	}
	return nil
}

// watchLeader sets jobset_addons_leader to 1 once mgr is elected (at once without leader
// election).
func watchLeader(ctx context.Context, mgr ctrl.Manager) {
	leader.Set(0)
	go func() {
		select {
		case <-mgr.Elected():
			leader.Set(1)
		case <-ctx.Done():
		}
	}()
}

// CountRefusals wraps the admission handler h of webhook (jobset, job, pod): every request it
// refuses counts in jobset_addons_webhook_refusals_total, by the refusal's first cause's type.
func CountRefusals(webhook string, h admission.Handler) admission.Handler {
	refusals.WithLabelValues(webhook, string(metav1.StatusReasonForbidden)) // the series from the start
	return refusalCounter{webhook: webhook, Handler: h}
}

type refusalCounter struct {
	webhook string
	admission.Handler
}

func (c refusalCounter) Handle(ctx context.Context, req admission.Request) admission.Response {
	resp := c.Handler.Handle(ctx, req)
	if !resp.Allowed {
		refusals.WithLabelValues(c.webhook, refusalReason(resp)).Inc()
	}
	return resp
}

// refusalReason is the type of the first cause of a refusal ("FieldValueInvalid"), else its
// reason ("Forbidden": admission.Denied), else "error" (admission.Errored): a bounded set.
func refusalReason(resp admission.Response) string {
	r := resp.Result
	switch {
	case r == nil:
		return "error"
	case r.Details != nil && len(r.Details.Causes) > 0 && r.Details.Causes[0].Type != "":
		return string(r.Details.Causes[0].Type)
	case r.Reason != "":
		return string(r.Reason)
	}
	return "error"
}

// countRefusal counts err, the refusal of a validating webhook (an API status error, as
// jobsets.Invalid makes), by its first cause's type.
func countRefusal(webhook string, err error) {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		refusals.WithLabelValues(webhook, refusalReason(admission.Response{AdmissionResponse: admissionResponse(status.Status())})).Inc()
		return
	}
	refusals.WithLabelValues(webhook, "error").Inc()
}

// Wait is one thing an add-on keeps waiting (a JobSet on a stage, a barrier, a gang, a claim; a
// PVC held by the pods that ran with it): Reason says on what, Key which thing (counted once
// however many Waits name it), Since from when.
type Wait struct {
	Reason string
	Key    string
	Since  time.Time
}

// Waits is a prometheus.Collector that reads, at each scrape, what List returns from the
// add-on's cache: the number of distinct Keys per Reason (Name) and the seconds the oldest has
// waited (Name + "_longest_seconds"), with every Reason of Reasons at 0 when nothing waits on
// it. A List that fails (the cache not synced yet) reports nothing.
type Waits struct {
	Name, Help string
	Reasons    []string
	List       func(ctx context.Context) ([]Wait, error)
	Clock      clock.PassiveClock

	count, longest *prometheus.Desc
}

// NewWaits is a Waits collector; see Waits.
func NewWaits(name, help string, reasons []string, list func(ctx context.Context) ([]Wait, error)) *Waits {
	return &Waits{
		Name: name, Help: help, Reasons: reasons, List: list, Clock: clock.RealClock{},
		count:   prometheus.NewDesc(name, help, []string{"reason"}, nil),
		longest: prometheus.NewDesc(name+"_longest_seconds", "Seconds the oldest of "+name+" has waited, by reason (0 when none waits).", []string{"reason"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (w *Waits) Describe(ch chan<- *prometheus.Desc) { ch <- w.count; ch <- w.longest }

// Collect implements prometheus.Collector.
func (w *Waits) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	waits, err := w.List(ctx)
	if err != nil {
		ctrl.Log.WithName("metrics").V(2).Info("Not reporting waits", "metric", w.Name, "err", err)
		return
	}
	keys := map[string]map[string]bool{}
	oldest := map[string]time.Time{}
	for _, r := range w.Reasons {
		keys[r] = map[string]bool{}
	}
	for _, x := range waits {
		if keys[x.Reason] == nil {
			keys[x.Reason] = map[string]bool{}
		}
		keys[x.Reason][x.Key] = true
		if o, ok := oldest[x.Reason]; !ok || x.Since.Before(o) {
			oldest[x.Reason] = x.Since
		}
	}
	now := w.Clock.Now()
	for r, k := range keys {
		ch <- prometheus.MustNewConstMetric(w.count, prometheus.GaugeValue, float64(len(k)), r)
		age := 0.0
		if o, ok := oldest[r]; ok {
			age = max(now.Sub(o).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(w.longest, prometheus.GaugeValue, age, r)
	}
}

// RegisterWaits registers w on reg (controller-runtime's metrics.Registry) with the add-on's
// name as the label addon.
func RegisterWaits(reg prometheus.Registerer, addonName string, w *Waits) error {
	return prometheus.WrapRegistererWith(prometheus.Labels{"addon": addonName}, reg).Register(w)
}

func admissionResponse(st metav1.Status) admissionv1.AdmissionResponse {
	return admissionv1.AdmissionResponse{Result: &st}
}
