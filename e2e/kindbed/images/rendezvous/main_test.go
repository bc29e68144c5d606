package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// freePort is a TCP port on 127.0.0.1 nothing listens on.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// TestAllRanksMeet: three ranks, the leader last to start, all meet.
func TestAllRanksMeet(t *testing.T) {
	coord := net.JoinHostPort("127.0.0.1", freePort(t))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	errs := make(chan error, 3)
	for r := 1; r < 3; r++ {
		go func() { errs <- join(ctx, coord, r, 3) }()
	}
	time.Sleep(500 * time.Millisecond)
	go func() { errs <- lead(ctx, coord, 3) }()
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestTimeoutNamesTheMissing: rank 2 never comes; rank 0 and rank 1 give up at the timeout,
// rank 0 naming rank 2.
func TestTimeoutNamesTheMissing(t *testing.T) {
	coord := net.JoinHostPort("127.0.0.1", freePort(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	joined := make(chan error, 1)
	go func() { joined <- join(ctx, coord, 1, 3) }()
	err := lead(ctx, coord, 3)
	if err == nil || !strings.Contains(err.Error(), "timed out waiting for ranks [2]") {
		t.Fatalf("rank 0: %v, want a timeout naming rank 2", err)
	}
	if err := <-joined; err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("rank 1: %v, want a timeout", err)
	}
	if d := time.Since(start); d < 900*time.Millisecond || d > 3*time.Second {
		t.Errorf("gave up after %s, want about the 1s timeout", d)
	}
}
