package framework

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jobset-addons/jobset-addons/e2e/testbed"
)

// AddonCounter is the sum of the samples of the counter metric that the add-on name serves
// whose labels contain match (`webhook="job"`), or of all of them when match is empty.
func AddonCounter(ctx context.Context, t *testing.T, name, metric, match string) int {
	t.Helper()
	n := 0.0
	for line, v := range testbed.Samples(AddonMetrics(ctx, t, name), metric) {
		if strings.Contains(line, match) {
			n += v
		}
	}
	return int(n)
}

// WaitRetryAfterGap waits until count, which a controller's failed attempt of what raises by
// one (a refusal, an error counted), rises at least gap after it rose last: the controller's
// back-off between attempts is then gap or more, and its next attempt, the back-off doubled,
// 2*gap or more away. A test that acts right after it and sees the effect well within 2*gap
// knows that its action, not the back-off, brought it.
func WaitRetryAfterGap(ctx context.Context, t *testing.T, what string, gap time.Duration, count func() int) {
	t.Helper()
	last, lastAt := count(), time.Now()
	Eventually(ctx, t, 2*time.Minute, fmt.Sprintf("%s, %s after the one before", what, gap), func(context.Context) (bool, string, error) {
		n := count()
		if n == last {
			return false, fmt.Sprintf("%d, the last %s ago", n, time.Since(lastAt).Round(time.Second)), nil
		}
		since := time.Since(lastAt)
		last, lastAt = n, time.Now()
		return since >= gap, fmt.Sprintf("%d, %s after the one before", n, since.Round(time.Second)), nil
	})
}
