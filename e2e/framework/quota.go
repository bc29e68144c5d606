package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CreateQuota creates the ResourceQuota q and waits until the quota controller has written its
// status: until then the API server refuses every create the quota covers ("status unknown"),
// for a reason other than the quota's limits.
func CreateQuota(ctx context.Context, t *testing.T, c client.Client, q *corev1.ResourceQuota) {
	t.Helper()
	CreateAll(ctx, t, c, q)
	Eventually(ctx, t, time.Minute, "quota "+q.Name+" counted", func(ctx context.Context) (bool, string, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(q), q); err != nil {
			return false, err.Error(), nil
		}
		return len(q.Status.Hard) > 0, fmt.Sprint(q.Status), nil
	})
}

// LimitsQuota creates in ns a ResourceQuota "limits" that asks every pod for CPU and memory
// limits (limits.cpu, limits.memory, ample), without a LimitRange to default them, and waits
// until the quota controller has counted it (CreateQuota).
func LimitsQuota(ctx context.Context, t *testing.T, c client.Client, ns string) *corev1.ResourceQuota {
	t.Helper()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "limits"}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
		corev1.ResourceLimitsCPU: resource.MustParse("10"), corev1.ResourceLimitsMemory: resource.MustParse("10Gi"),
	}}}
	CreateQuota(ctx, t, c, q)
	return q
}

// Quota creates in ns the ResourceQuota name that holds res at most at limit, and waits until
// the quota controller has counted it (CreateQuota).
func Quota(ctx context.Context, t *testing.T, c client.Client, ns, name string, res corev1.ResourceName, limit string) *corev1.ResourceQuota {
	t.Helper()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ResourceQuotaSpec{
		Hard: corev1.ResourceList{res: resource.MustParse(limit)},
	}}
	CreateQuota(ctx, t, c, q)
	return q
}

// RaiseQuota sets q's limit of res to limit (retrying on a conflict), to make room for what it
// held back.
func RaiseQuota(ctx context.Context, t *testing.T, c client.Client, q *corev1.ResourceQuota, res corev1.ResourceName, limit string) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(q), q); err != nil {
			return err
		}
		q.Spec.Hard[res] = resource.MustParse(limit)
		return c.Update(ctx, q)
	}); err != nil {
		t.Fatal(err)
	}
}
