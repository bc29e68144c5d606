package testbed

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Front stands where a Service stands in a cluster: one address for the apiserver to call, in
// front of every replica of an add-on's webhook server. It forwards each connection (TLS
// passes through untouched) to the next replica that accepts one, as kube-proxy forwards to the
// next ready endpoint, so that killing one replica does not take the webhooks down. Pause closes
// its listener, so that calls are refused as if no replica were reachable, until Resume.
type Front struct {
	addr     string
	backends []string

	mu       sync.Mutex
	ln       net.Listener
	next     atomic.Uint64
	wg       sync.WaitGroup
	conns    map[net.Conn]struct{}
	Refused  atomic.Int64 // connections no replica accepted
	Accepted atomic.Int64
}

// NewFront listens on addr and forwards to backends.
func NewFront(addr string, backends ...string) (*Front, error) {
	f := &Front{addr: addr, backends: backends}
	return f, f.Resume()
}

// Resume listens again after Pause; it does nothing if the Front listens.
func (f *Front) Resume() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ln != nil {
		return nil
	}
	var ln net.Listener
	var err error
	// The port was closed a moment ago: retry while the kernel lets it go.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if ln, err = net.Listen("tcp", f.addr); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		return err
	}
	f.ln = ln
	f.wg.Add(1)
	go f.serve(ln)
	return nil
}

// Pause stops listening and cuts every open connection: every call is refused until Resume.
func (f *Front) Pause() {
	f.mu.Lock()
	ln := f.ln
	f.ln = nil
	for c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
		f.wg.Wait()
	}
}

// track records conn as open (or, with open false, closed); it refuses one opened while paused.
func (f *Front) track(conn net.Conn, open bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !open {
		delete(f.conns, conn)
		return true
	}
	if f.ln == nil {
		return false
	}
	if f.conns == nil {
		f.conns = map[net.Conn]struct{}{}
	}
	f.conns[conn] = struct{}{}
	return true
}

// Close stops the Front.
func (f *Front) Close() { f.Pause() }

func (f *Front) serve(ln net.Listener) {
	defer f.wg.Done()
	for {
		conn, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		go f.forward(conn)
	}
}

// forward joins conn to the first replica, starting from the next in turn, that accepts.
func (f *Front) forward(conn net.Conn) {
	defer conn.Close()
	if !f.track(conn, true) {
		return
	}
	defer f.track(conn, false)
	start := f.next.Add(1)
	var up net.Conn
	for i := range f.backends {
		b := f.backends[(int(start)+i)%len(f.backends)]
		var err error
		if up, err = net.DialTimeout("tcp", b, time.Second); err == nil {
			break
		}
	}
	if up == nil {
		f.Refused.Add(1)
		return
	}
	f.Accepted.Add(1)
	defer up.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(up, conn)
	go pipe(conn, up)
	<-done
	<-done
}
