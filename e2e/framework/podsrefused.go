package framework

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// RefusePods makes a ValidatingAdmissionPolicy, bound with Deny to the namespace ns, that refuses
// the pods for which expression is false, with the message messageExpression makes: a platform's
// rule on what pods may use, which the API server applies after the mutating webhooks (so to
// what the add-ons put in the pods). It waits until a probe pod, with what uses adds to its
// spec, is refused in ns, and deletes the policy when the test ends.
func RefusePods(ctx context.Context, t *testing.T, c client.Client, ns, expression, messageExpression string, uses func(*corev1.PodSpec)) {
	t.Helper()
	DenyValidation(ctx, t, c, "e2e-refuse-pods-"+ns, admissionregistrationv1.MatchResources{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
		ResourceRules:     RulesOf("", "pods", admissionregistrationv1.Create),
	}, admissionregistrationv1.Validation{Expression: expression, MessageExpression: messageExpression})
	Eventually(ctx, t, 30*time.Second, "the pod policy in effect", func(ctx context.Context) (bool, string, error) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		}}
		uses(&pod.Spec)
		err := c.Create(ctx, pod)
		if err == nil {
			_ = c.Delete(ctx, pod)
			return false, "created", nil
		}
		return strings.Contains(err.Error(), "denied request"), err.Error(), nil
	})
}

// ExpectPodsRefused checks that the pods of js refused by the API server are told on js within
// 30 s of now: one PodsRefused Warning whose message has each of want, still one 5 s later (the
// Job controller retries; told once per cause), and kubectl jobset-addons status shows it.
func ExpectPodsRefused(ctx context.Context, t *testing.T, cfg *envconf.Config, c client.Client, js *jobsetv1alpha2.JobSet, want ...string) {
	t.Helper()
	start := time.Now()
	Eventually(ctx, t, 30*time.Second, "PodsRefused on the JobSet", func(ctx context.Context) (bool, string, error) {
		msgs, err := EventMessages(ctx, c, js, "PodsRefused")
		if err != nil {
			return false, err.Error(), nil
		}
		return len(msgs) > 0, fmt.Sprint(msgs), nil
	})
	t.Logf("PodsRefused %v after it was looked for", time.Since(start).Round(time.Millisecond))
	time.Sleep(5 * time.Second)
	msgs, err := EventMessages(ctx, c, js, "PodsRefused")
	ok := err == nil && len(msgs) == 1
	for _, w := range want {
		ok = ok && strings.Contains(msgs[0], w)
	}
	if !ok {
		t.Errorf("PodsRefused %q (%v): want one that says each of %q", msgs, err, want)
	}
	if out := AddonsStatus(ctx, t, cfg, js.Namespace, js.Name); !strings.Contains(out, "PodsRefused") {
		t.Errorf("kubectl jobset-addons status does not show PodsRefused:\n%s", out)
	}
}
