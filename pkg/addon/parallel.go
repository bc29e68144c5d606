package addon

import (
	"context"
	"errors"

	"k8s.io/client-go/util/workqueue"
)

// ForEach calls fn(i) for every i from 0 to n-1, at most workers calls at once (at least one),
// and returns the calls' errors joined, in the order of i. Once ctx is done no further call
// starts, and ctx's error is returned with the others: the bounded-parallel API calls of one
// reconcile (claims made, pods patched) are all written with it.
func ForEach(ctx context.Context, workers, n int, fn func(i int) error) error {
	if n <= 0 {
		return nil
	}
	errs := make([]error, n)
	ran := make([]bool, n)
	workqueue.ParallelizeUntil(ctx, max(workers, 1), n, func(i int) {
		ran[i] = true
		errs[i] = fn(i)
	})
	for i := range ran {
		if !ran[i] {
			errs = append(errs, ctx.Err())
			break
		}
	}
	return errors.Join(errs...)
}
