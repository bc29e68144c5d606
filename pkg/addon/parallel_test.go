package addon

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

func TestForEach(t *testing.T) {
	t.Run("every index once, at most workers at once, errors joined", func(t *testing.T) {
		var running, most, calls atomic.Int32
		seen := make([]atomic.Int32, 20)
		errOdd := errors.New("odd")
		err := ForEach(context.Background(), 3, len(seen), func(i int) error {
			calls.Add(1)
			seen[i].Add(1)
			now := running.Add(1)
			defer running.Add(-1)
			for {
				m := most.Load()
				if now <= m || most.CompareAndSwap(m, now) {
					break
				}
			}
			if i%2 == 1 {
				return errOdd
			}
			return nil
		})
		if calls.Load() != 20 {
			t.Errorf("%d calls, want 20", calls.Load())
		}
		for i := range seen {
			if seen[i].Load() != 1 {
				t.Errorf("index %d called %d times, want 1", i, seen[i].Load())
			}
		}
		if most.Load() > 3 {
			t.Errorf("%d calls at once, want at most 3", most.Load())
		}
		if !errors.Is(err, errOdd) {
			t.Errorf("error %v, want the calls' errors joined", err)
		}
	})
	t.Run("no workers: one at a time", func(t *testing.T) {
		n := 0
		if err := ForEach(context.Background(), 0, 5, func(int) error { n++; return nil }); err != nil || n != 5 {
			t.Errorf("got %d calls, error %v; want 5, nil", n, err)
		}
	})
	t.Run("context cancelled: nothing more starts, its error returned", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var calls atomic.Int32
		err := ForEach(ctx, 1, 10, func(int) error {
			calls.Add(1)
			cancel()
			return nil
		})
		if calls.Load() != 1 {
			t.Errorf("%d calls after the cancel, want 1", calls.Load())
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want context.Canceled", err)
		}
	})
}
