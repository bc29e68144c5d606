package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jobset-addons/jobset-addons/e2e/testbed"
)

// clockTick is the unit of /proc/<pid>/stat's CPU times: USER_HZ, 100 on Linux.
const clockTick = 10 * time.Millisecond

// cpuSampler samples, every 20 ms, the CPU time the named processes (by /proc/<pid>/comm) have
// used, so that a window known only afterwards (from the add-on's log) can be cut from it.
type cpuSampler struct {
	names []string
	pids  map[string][]int
	// lookedFor is when names no process runs were last looked for in /proc.
	lookedFor time.Time
	stop      chan struct{}
	done      chan struct{}

	mu      sync.Mutex
	samples []cpuSample
}

type cpuSample struct {
	at   time.Time
	used map[string]time.Duration
}

// sampleCPU starts sampling the processes whose comm is one of names. A name that no process
// has yet is looked for again every 100 ms (lookForMissing), so that a process started after
// the sampling (a controller's cold start in the window) is counted, from its own start: its
// /proc counters begin at zero.
func sampleCPU(names ...string) *cpuSampler {
	s := &cpuSampler{names: names, pids: commPIDs(names), lookedFor: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	s.sample()
	go func() {
		defer close(s.done)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				s.sample()
				return
			case <-t.C:
				s.sample()
			}
		}
	}()
	return s
}

// machineCPU is the name under which the sampler counts the CPU time of the whole machine.
const machineCPU = "(all processes)"

func (s *cpuSampler) sample() {
	s.lookForMissing()
	used := map[string]time.Duration{machineCPU: machineBusy()}
	for name, pids := range s.pids {
		for _, pid := range pids {
			used[name] += cpuUsed(pid)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, cpuSample{at: time.Now(), used: used})
}

// lookForMissing looks in /proc, at most every 100 ms, for the names that no process had.
// Only the sampling goroutine calls it (and sampleCPU before starting it).
func (s *cpuSampler) lookForMissing() {
	var missing []string
	for _, name := range s.names {
		if len(s.pids[name]) == 0 {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 || time.Since(s.lookedFor) < 100*time.Millisecond {
		return
	}
	s.lookedFor = time.Now()
	for name, pids := range commPIDs(missing) {
		s.pids[name] = pids
	}
}

// Stop ends the sampling.
func (s *cpuSampler) Stop() {
	close(s.stop)
	<-s.done
}

// between is the CPU time each process used from the last sample at or before from to the
// first at or after to (the whole sampling where these are missing).
func (s *cpuSampler) between(from, to time.Time) map[string]time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	first, last := s.samples[0], s.samples[len(s.samples)-1]
	for _, x := range s.samples {
		if !x.at.After(from) {
			first = x
		}
	}
	for i := len(s.samples) - 1; i >= 0; i-- {
		if !s.samples[i].at.Before(to) {
			last = s.samples[i]
		}
	}
	out := map[string]time.Duration{}
	for _, name := range append([]string{machineCPU}, s.names...) {
		out[name] = last.used[name] - first.used[name]
	}
	return out
}

// commPIDs are the processes whose /proc/<pid>/comm is one of names, of this testbed: those
// whose command line names its work directory (the testbed's processes and the add-ons, run
// with files from it), and this process. Other testbeds on the machine run the same binaries.
func commPIDs(names []string) map[string][]int {
	workDir := ""
	if tb, err := testbed.DefaultConfig(); err == nil {
		workDir = tb.WorkDir
	}
	out := map[string][]int{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		comm, err := os.ReadFile(filepath.Join(d, "comm"))
		if err != nil {
			continue
		}
		name := string(bytes.TrimSpace(comm))
		if !slices.Contains(names, name) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		if cmdline, err := os.ReadFile(filepath.Join(d, "cmdline")); pid != os.Getpid() && workDir != "" && (err != nil || !bytes.Contains(cmdline, []byte(workDir))) {
			continue
		}
		out[name] = append(out[name], pid)
	}
	return out
}

// cpuUsed is the user and system CPU time process pid has used; 0 once it is gone.
func cpuUsed(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The fields after the command, which is in parentheses and may hold spaces: state is
	// field 3, utime 14 and stime 15.
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * clockTick
}

// machineBusy is the CPU time all processors spent on anything but idling, from /proc/stat.
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	var busy int64
	for i, f := range fields[1:] {
		v, _ := strconv.ParseInt(f, 10, 64)
		if i != 3 && i != 4 && i < 7 { // not idle, iowait or stolen; guest times are in user already
			busy += v
		}
	}
	return time.Duration(busy) * clockTick
}
