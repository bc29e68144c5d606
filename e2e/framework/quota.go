package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CreateQuota creates the ResourceQuota q and waits until the quota controller has written its
// status: until then the API server refuses every create the quota covers ("status unknown"),
// for a reason other than the quota's limits.
func CreateQuota(ctx context.Context, t *testing.T, c client.Client, q *corev1.ResourceQuota) {
	t.Helper()
	CreateAll(ctx, t, c, q)
	Eventually(ctx, t, 30*time.Second, "quota status", func(ctx context.Context) (bool, string, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(q), q); err != nil {
			return false, err.Error(), nil
		}
		return len(q.Status.Hard) > 0, fmt.Sprintf("%+v", q.Status), nil
	})
}
