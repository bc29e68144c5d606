package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/testbed"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// EventReasons counts the reasons of the Events about obj.
func EventReasons(ctx context.Context, c client.Client, obj client.Object) (map[string]int, error) {
	var list corev1.EventList
	if err := c.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, e := range list.Items {
		if e.InvolvedObject.UID == obj.GetUID() {
			out[e.Reason]++
		}
	}
	return out, nil
}

// WaitEventCounts waits until the Events about obj count exactly want for each reason in it, and
// fails at once when one counts more. Events are written by a broadcaster after the call they
// record, so the last of them may reach the API server after its effect is seen.
func WaitEventCounts(ctx context.Context, t *testing.T, c client.Client, obj client.Object, want map[string]int) {
	t.Helper()
	Eventually(ctx, t, 30*time.Second, fmt.Sprintf("Events %v", want), func(ctx context.Context) (bool, string, error) {
		got, err := EventReasons(ctx, c, obj)
		if err != nil {
			return false, err.Error(), nil
		}
		done := true
		for reason, n := range want {
			if got[reason] > n {
				return false, "", fmt.Errorf("events %v: more %s than %d", got, reason, n)
			}
			done = done && got[reason] == n
		}
		return done, fmt.Sprint(got), nil
	})
}

// EventMessages lists the messages of the Events about obj with the reason.
func EventMessages(ctx context.Context, c client.Client, obj client.Object, reason string) ([]string, error) {
	var list corev1.EventList
	if err := c.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil, err
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.UID == obj.GetUID() && e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out, nil
}

// CausePaths are the field paths of the causes of an API error (an admission refusal), and
// whether it had any details.
func CausePaths(err error) ([]string, bool) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return nil, false
	}
	var paths []string
	for _, cause := range status.Status().Details.Causes {
		paths = append(paths, cause.Field)
	}
	return paths, true
}

// CreateRefused creates obj, expecting admission to refuse it: it fails the test if obj was
// created (and deletes it) or if the refusal names no field, and returns the field paths of
// its causes and the refusal.
func CreateRefused(ctx context.Context, t *testing.T, c client.Client, obj client.Object) ([]string, error) {
	t.Helper()
	err := c.Create(ctx, obj)
	if err == nil {
		_ = c.Delete(ctx, obj)
		t.Fatalf("%s created; want it refused", obj.GetName())
	}
	paths, ok := CausePaths(err)
	if !ok {
		t.Fatalf("error %v has no field causes", err)
	}
	ExpectCauses(t, err, obj.GetNamespace())
	return paths, err
}

// ExpectCauses compares the causes of the refusal err, one "field: message" a line, sorted,
// with the calling suite's golden file testdata/refusals/TEST.txt (TEST is the test's name), so
// that every bad input is pinned to its exact paths and messages; the namespace ns reads as
// NAMESPACE there. With E2E_UPDATE_GOLDEN=1 it writes the file instead: review the diff.
func ExpectCauses(t *testing.T, err error, ns string) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		t.Errorf("error %v has no causes", err)
		return
	}
	var lines []string
	for _, c := range status.Status().Details.Causes {
		line := c.Field + ": " + c.Message
		if ns != "" {
			line = strings.ReplaceAll(line, ns, "NAMESPACE")
		}
		lines = append(lines, line)
	}
	slices.Sort(lines)
	got := strings.Join(lines, "\n") + "\n"
	file := filepath.Join("testdata", "refusals", strings.NewReplacer("/", "__", " ", "_", ":", "_").Replace(t.Name())+".txt")
	if os.Getenv("E2E_UPDATE_GOLDEN") == "1" {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, rerr := os.ReadFile(file)
	if rerr != nil {
		t.Errorf("no golden refusal %s (E2E_UPDATE_GOLDEN=1 writes it): %v\ngot:\n%s", file, rerr, got)
		return
	}
	if string(want) != got {
		t.Errorf("refusal causes differ from %s\nwant:\n%sgot:\n%s", file, want, got)
	}
}

// warnings collects the apiserver's warning headers.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

// CreateWithWarnings creates obj and returns the warnings its admission answered with (the
// webhooks' admission warnings among them).
func CreateWithWarnings(ctx context.Context, t *testing.T, cfg *envconf.Config, obj client.Object) []string {
	t.Helper()
	w := &warnings{}
	rc := rest.CopyConfig(cfg.Client().RESTConfig())
	rc.WarningHandlerWithContext = w
	c, err := client.New(rc, client.Options{Scheme: Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, obj); err != nil {
		t.Fatalf("creating %s: %v", obj.GetName(), err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.list)
}

// ExpectRefusedAt creates obj, expecting the webhook named webhook to refuse it with causes at
// exactly wantPaths (in any order).
func ExpectRefusedAt(ctx context.Context, t *testing.T, c client.Client, obj client.Object, webhook string, wantPaths []string) {
	t.Helper()
	paths, err := CreateRefused(ctx, t, c, obj)
	slices.Sort(paths)
	want := slices.Sorted(slices.Values(wantPaths))
	if !slices.Equal(paths, want) {
		t.Errorf("refused at %q, want exactly %q\n(error: %v)", paths, want, err)
	}
	if !strings.Contains(err.Error(), webhook) {
		t.Errorf("not refused by the webhook %s: %v", webhook, err)
	}
}

// PollPods lists pods (of opts, such as a namespace and a JobSet's label) every 50 ms and
// hands each list to seen, from a goroutine, until the stop it returns is called. stop
// returns once seen has returned for the last time.
func PollPods(ctx context.Context, c client.Client, seen func([]corev1.Pod), opts ...client.ListOption) (stop func()) {
	stopped, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			var pods corev1.PodList
			if err := c.List(ctx, &pods, opts...); err == nil {
				seen(pods.Items)
			}
			select {
			case <-stopped:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(stopped) })
		<-done
	}
}

// AllAddonsDeviceClass is the DeviceClass of AllAddonsJobSet's per-Job claim.
const AllAddonsDeviceClass = "gpu.example.com"

// AllAddonsJobSet is a JobSet that uses the four add-ons: a shared and a per-pod PVC (volumeclaims),
// a claim per Job of node (resourceclaims), node waiting for init to complete (sequencer), and a
// gang per stage of Kubernetes' own Workload and PodGroups (podgroups). Its pods run a second.
//
// AllAddonsDeviceClass is its claim's DeviceClass: testbed.PublishDevices of it lets the claim be
// allocated.
func AllAddonsJobSet(ns, name string) *jobsetv1alpha2.JobSet {
	rj := func(name string, mounts ...string) jobsetv1alpha2.ReplicatedJob {
		var vm []corev1.VolumeMount
		for _, m := range mounts {
			vm = append(vm, corev1.VolumeMount{Name: m, MountPath: "/" + m})
		}
		return jobsetv1alpha2.ReplicatedJob{Name: name, Replicas: 1, Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](1), Completions: ptr.To[int32](1), BackoffLimit: ptr.To[int32](0),
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{testbed.DelayAnnotationKey: "1s"}},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "main", Image: "busybox", VolumeMounts: vm}}},
			},
		}}}
	}
	node := rj("node", "data", "ckpt")
	node.Template.Annotations = map[string]string{contract.TemplatesAnnotationKey: `[{metadata: {name: gpu}, spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: ` + AllAddonsDeviceClass + `}}]}}}]`}
	pvc := func(name string) string {
		return `{metadata: {name: ` + name + `}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}`
	}
	return &jobsetv1alpha2.JobSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{
			contract.PoliciesAnnotationKey:        `[{templates: [` + pvc("data") + `]}, {targetReplicatedJobs: [node], templates: [` + pvc("ckpt") + `]}]`,
			contract.ExecutionPolicyAnnotationKey: string(contract.ExecutionPolicyInOrder),
			contract.SchedulerAnnotationKey:       "kubernetes",
		}},
		Spec: jobsetv1alpha2.JobSetSpec{ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{rj("init"), node}},
	}
}

// WithoutAddons is js, a copy, with none of the add-ons' annotations and no volume mounts (their
// volumes were volumeclaims'): the same JobSet as upstream JobSet alone runs it, a control.
func WithoutAddons(js *jobsetv1alpha2.JobSet) *jobsetv1alpha2.JobSet {
	out := js.DeepCopy()
	for _, key := range []string{contract.PoliciesAnnotationKey, contract.ExecutionPolicyAnnotationKey, contract.SchedulerAnnotationKey} {
		delete(out.Annotations, key)
	}
	for i := range out.Spec.ReplicatedJobs {
		rj := &out.Spec.ReplicatedJobs[i]
		delete(rj.Template.Annotations, contract.TemplatesAnnotationKey)
		for c := range rj.Template.Spec.Template.Spec.Containers {
			rj.Template.Spec.Template.Spec.Containers[c].VolumeMounts = nil
		}
	}
	return out
}
