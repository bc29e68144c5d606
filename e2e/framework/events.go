package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
