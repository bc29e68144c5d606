// Command rendezvous is the workload of the kind suite's distributed-start stories: what a
// distributed training framework does first (JAX's distributed.initialize, torch.distributed's
// rendezvous), and nothing else. Rank 0 listens, reached at its own JobSet DNS name
// (<jobset>-<rjob>-<job>-<index>.<subdomain>, JobSet's headless Service); every other rank
// resolves that name, dials it and says hello; once rank 0 has heard from every rank it answers
// each one, and all exit 0. Every rank gives up after -timeout, counted from its own start, with
// exit code 1 and a message naming what it still waited for, written to stderr and to
// /dev/termination-log (the container's status message), as JAX's initialization_timeout does.
//
// The rank is -rank, else JOB_INDEX*pods-per-job+JOB_COMPLETION_INDEX (JobSet's job-index label
// through the downward API, and the Job's completion index).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// start is when the program started: every line it prints says how long after.
var start = time.Now()

func logf(format string, args ...any) {
	fmt.Printf("rendezvous: +%.2fs %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}

func main() {
	coordinator := flag.String("coordinator", "", "rank 0's host:port (its JobSet DNS name)")
	world := flag.Int("world", 0, "number of ranks")
	podsPerJob := flag.Int("pods-per-job", 1, "pods per Job, to compute the rank from JOB_INDEX and JOB_COMPLETION_INDEX")
	rank := flag.Int("rank", -1, "this rank (default: from JOB_INDEX and JOB_COMPLETION_INDEX)")
	timeout := flag.Duration("timeout", 10*time.Second, "give up after this long (RENDEZVOUS_TIMEOUT overrides)")
	flag.Parse()
	if v := os.Getenv("RENDEZVOUS_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			fail("RENDEZVOUS_TIMEOUT=%q: %v", v, err)
		}
		*timeout = d
	}
	if *rank < 0 {
		r, err := rankFromEnv(*podsPerJob)
		if err != nil {
			fail("%v", err)
		}
		*rank = r
	}
	if *coordinator == "" || *world < 1 || *rank >= *world {
		fail("want -coordinator host:port, -world >= 1 and a rank below it (rank %d, world %d)", *rank, *world)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var err error
	if *rank == 0 {
		err = lead(ctx, *coordinator, *world)
	} else {
		err = join(ctx, *coordinator, *rank, *world)
	}
	if err != nil {
		fail("rank %d of %d: %v", *rank, *world, err)
	}
	logf("rank %d of %d: all %d ranks met", *rank, *world, *world)
}

func rankFromEnv(podsPerJob int) (int, error) {
	job, err := strconv.Atoi(os.Getenv("JOB_INDEX"))
	if err != nil {
		return 0, fmt.Errorf("no -rank and JOB_INDEX=%q: %v", os.Getenv("JOB_INDEX"), err)
	}
	idx, err := strconv.Atoi(os.Getenv("JOB_COMPLETION_INDEX"))
	if err != nil {
		return 0, fmt.Errorf("no -rank and JOB_COMPLETION_INDEX=%q: %v", os.Getenv("JOB_COMPLETION_INDEX"), err)
	}
	return job*podsPerJob + idx, nil
}

// lead listens on coordinator's port on every address of the pod, as JAX's coordination service
// does (the others reach it by its name: JobSet's headless Service gives it its pod IP), collects
// a hello from every other rank and answers each once all are in. It does not look its own name
// up: a pod's name resolves only once the pod's IP is published, and an early "no such host" is
// cached by the cluster's DNS (kubeadm's CoreDNS: 30 s).
func lead(ctx context.Context, coordinator string, world int) error {
	host, port, err := net.SplitHostPort(coordinator)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", ":"+port)
	if err != nil {
		return err
	}
	logf("rank 0: listening on %s, reached as %s", ln.Addr(), host)
	go func() { <-ctx.Done(); ln.Close() }()
	heard := map[int]net.Conn{}
	for len(heard) < world-1 {
		conn, err := ln.Accept()
		if err != nil {
			return fmt.Errorf("timed out waiting for ranks %v at %s (heard from %d of %d)", missing(heard, world), ln.Addr(), len(heard), world-1)
		}
		_ = conn.SetDeadline(deadline(ctx))
		line, err := bufio.NewReader(conn).ReadString('\n')
		var r int
		if _, serr := fmt.Sscanf(line, "hello %d", &r); err != nil || serr != nil || r < 1 || r >= world {
			conn.Close()
			continue
		}
		logf("rank 0: hello from rank %d at %s", r, conn.RemoteAddr())
		heard[r] = conn
	}
	for r, conn := range heard {
		if _, err := fmt.Fprintf(conn, "welcome %d\n", world); err != nil {
			return fmt.Errorf("answering rank %d: %w", r, err)
		}
		conn.Close()
	}
	return nil
}

// join resolves and dials rank 0 until it answers, says hello and waits for the welcome.
func join(ctx context.Context, coordinator string, rank, world int) error {
	host, port, err := net.SplitHostPort(coordinator)
	if err != nil {
		return err
	}
	var last error
	for {
		ip, err := resolve(ctx, host)
		if err != nil {
			return fmt.Errorf("timed out resolving rank 0's name %s: %w", host, err)
		}
		d := net.Dialer{Timeout: time.Second}
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ip, port))
		if err == nil {
			logf("rank %d: %s is %s, connected", rank, host, ip)
			return hello(ctx, conn, rank, world)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out dialing rank 0 at %s: %v", coordinator, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func hello(ctx context.Context, conn net.Conn, rank, world int) error {
	defer conn.Close()
	_ = conn.SetDeadline(deadline(ctx))
	if _, err := fmt.Fprintf(conn, "hello %d\n", rank); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("timed out waiting for rank 0 to hear from all %d ranks", world)
		}
		return fmt.Errorf("rank 0 closed the connection: %w", err)
	}
	if strings.TrimSpace(line) != fmt.Sprintf("welcome %d", world) {
		return fmt.Errorf("rank 0 answered %q", line)
	}
	return nil
}

// resolve looks host up until it has an address or ctx ends: a pod's name is published once
// the pod has an IP.
func resolve(ctx context.Context, host string) (string, error) {
	var last error
	for {
		addrs, err := net.DefaultResolver.LookupHost(ctx, host)
		if err == nil && len(addrs) > 0 {
			if last != nil {
				logf("%s resolved to %s after %v", host, addrs[0], last)
			}
			return addrs[0], nil
		}
		if last == nil {
			logf("%s does not resolve yet: %v", host, err)
		}
		last = err
		select {
		case <-ctx.Done():
			return "", last
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

func missing(heard map[int]net.Conn, world int) []int {
	var out []int
	for r := 1; r < world; r++ {
		if _, ok := heard[r]; !ok {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

func fail(format string, args ...any) {
	msg := "rendezvous: " + fmt.Sprintf(format, args...)
	fmt.Fprintln(os.Stderr, msg)
	_ = os.WriteFile("/dev/termination-log", []byte(msg+"\n"), 0o644)
	os.Exit(1)
}
