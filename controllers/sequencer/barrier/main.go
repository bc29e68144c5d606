// Command barrier is the start barrier's init container (docs/sequencer.md): it waits until the
// sequencer controller opens the pod's barrier, then exits 0 so that the pod's main containers
// start. It learns the state from a file, the pod's annotation
// sequencer.jobset-addons.io/barrier-state that the kubelet writes into a downwardAPI volume:
// "open" lets the pod proceed; "failed: <reason>" (the barrier timed out; the reason names the
// pods still missing) ends it with exit code 1 and the reason in its termination message. It
// needs no credentials and makes no network call. With no word past --deadline (no controller
// is running), it fails on its own.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

// The values of the pod annotation, and the default deadline: contract's
// StartBarrierOpen, StartBarrierFailedPrefix and DefaultStartBarrierTimeout+StartBarrierGrace
// (main_test.go checks they agree). They are not imported: the contract module brings
// apimachinery, which made the binary 9.5 MB instead of 1.5 MB.
const (
	open            = "open"
	failed          = "failed:"
	defaultDeadline = 12 * time.Minute
)

func main() {
	stateFile := flag.String("state-file", "/var/run/jobset-addons/barrier/state", "the file holding the pod's barrier state (a downwardAPI volume of its annotation)")
	deadline := flag.Duration("deadline", defaultDeadline, "how long to wait without being told anything before failing")
	poll := flag.Duration("poll", 100*time.Millisecond, "how often the file is read")
	terminationLog := flag.String("termination-log", "/dev/termination-log", "where the reason of a failure is written (the container's terminationMessagePath)")
	flag.Parse()

	ctx, cancel := context.WithTimeout(context.Background(), *deadline)
	defer cancel()
	start := time.Now()
	err := wait(ctx, *stateFile, *poll)
	if err == nil {
		fmt.Printf("start barrier open after %v\n", time.Since(start).Round(time.Millisecond))
		return
	}
	msg := err.Error()
	fmt.Fprintln(os.Stderr, msg)
	_ = os.WriteFile(*terminationLog, []byte(msg), 0o644) // best effort: stderr has it too
	os.Exit(1)
}

// wait returns nil once the file says open, an error once it says failed or ctx ends.
func wait(ctx context.Context, stateFile string, poll time.Duration) error {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		data, err := os.ReadFile(stateFile)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("start barrier: reading %s: %w", stateFile, err)
		}
		state := strings.TrimSpace(string(data))
		switch {
		case state == open:
			return nil
		case strings.HasPrefix(state, failed):
			return fmt.Errorf("start barrier %s", state)
		}
		select {
		case <-ctx.Done():
			return errors.New("start barrier: not opened before the deadline, and nothing said why (is the sequencer running?)")
		case <-t.C:
		}
	}
}
