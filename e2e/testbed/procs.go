package testbed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

func (c Config) procsDir() string { return filepath.Join(c.WorkDir, "procs") }

// StartProcess starts a long-running process that belongs to the testbed (the JobSet
// controller; the add-on controllers of the demo) in a session of its own, so that it
// outlives the command that started it, logs to WorkDir/procs/NAME.log, and Down stops it.
func StartProcess(c Config, name, bin string, args ...string) (logPath string, err error) {
	dir := c.procsDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := stopProcess(c, name); err != nil {
		return "", err
	}
	logPath = filepath.Join(dir, name+".log")
	// Appended to, so that the log of a replica that was killed and restarted keeps both lives.
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return "", err
	}
	defer logf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = c.env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("starting %s: %w", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		return "", err
	}
	_ = cmd.Process.Release()
	return logPath, nil
}

// stopProcesses stops every process StartProcess started.
func stopProcesses(c Config) error {
	pids, _ := filepath.Glob(filepath.Join(c.procsDir(), "*.pid"))
	var errs []error
	for _, p := range pids {
		errs = append(errs, stopProcess(c, strings.TrimSuffix(filepath.Base(p), ".pid")))
	}
	return errors.Join(errs...)
}

// stopProcess sends SIGTERM to the process group of name, then SIGKILL after 10 s.
func stopProcess(c Config, name string) error { return endProcess(c, name, syscall.SIGTERM) }

// endProcess sends sig to the process group of name, then SIGKILL if it still runs after 10 s.
func endProcess(c Config, name string, sig syscall.Signal) error {
	pidFile := filepath.Join(c.procsDir(), name+".pid")
	b, err := os.ReadFile(pidFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b)))
	if err != nil {
		return fmt.Errorf("%s: %w", pidFile, err)
	}
	_ = syscall.Kill(-pid, sig)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && alive(pid) {
		time.Sleep(100 * time.Millisecond)
	}
	if alive(pid) {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	return os.Remove(pidFile)
}

// alive says whether pid runs; a zombie (exited, not yet reaped by its parent) does not.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z' && b[i+2] != 'X'
	}
	return true
}

// Process is one running process of the testbed.
type Process struct {
	PID    int
	Name   string
	RSSKiB int
}

// Processes lists the processes running a testbed binary for this work directory (their
// command lines name files under it), with their resident memory.
func Processes(c Config) []Process {
	bins := map[string]bool{}
	links, _ := filepath.Glob(filepath.Join(c.BinDir(), "*"))
	for _, l := range links {
		if target, err := filepath.EvalSymlinks(l); err == nil {
			bins[target] = true
		}
	}
	var out []Process
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		exe, err := os.Readlink(filepath.Join(p, "exe"))
		if err != nil || !bins[exe] {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(c.WorkDir)) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(p))
		if !alive(pid) {
			continue
		}
		proc := Process{PID: pid, Name: filepath.Base(exe)}
		if status, err := os.ReadFile(filepath.Join(p, "status")); err == nil {
			for _, line := range strings.Split(string(status), "\n") {
				if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
					proc.RSSKiB, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
				}
			}
		}
		out = append(out, proc)
	}
	return out
}

// ProcessRSS is the resident memory, in KiB, of the process StartProcess started as name.
func ProcessRSS(c Config, name string) (int, error) {
	b, err := os.ReadFile(filepath.Join(c.procsDir(), name+".pid"))
	if err != nil {
		return 0, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%s/status", bytes.TrimSpace(b)))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
		}
	}
	return 0, fmt.Errorf("no VmRSS for %s", name)
}

// ProcessLog is the log of the process StartProcess started as name.
func (c Config) ProcessLog(name string) string { return filepath.Join(c.procsDir(), name+".log") }

// LogSize is the size of process name's log now (0 if none): its log is appended to, and
// WaitLogged looks only past it.
func LogSize(c Config, name string) int64 {
	st, err := os.Stat(c.ProcessLog(name))
	if err != nil {
		return 0
	}
	return st.Size()
}

// WaitLogged waits, at most timeout, until process name's log matches line past offset from.
func WaitLogged(ctx context.Context, c Config, name string, from int64, line *regexp.Regexp, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		b, err := os.ReadFile(c.ProcessLog(name))
		return err == nil && int64(len(b)) > from && line.Match(b[from:]), nil
	})
}

// PauseProcess stops the process StartProcess started as name (SIGSTOP to its process group):
// it holds its connections and ports but does nothing until ResumeProcess. A test uses it to
// hold a controller still for a moment, where stopping it would take its webhooks away.
func PauseProcess(c Config, name string) error { return signalProcess(c, name, syscall.SIGSTOP) }

// ResumeProcess continues a process PauseProcess stopped (SIGCONT).
func ResumeProcess(c Config, name string) error { return signalProcess(c, name, syscall.SIGCONT) }

func signalProcess(c Config, name string, sig syscall.Signal) error {
	b, err := os.ReadFile(filepath.Join(c.procsDir(), name+".pid"))
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b)))
	if err != nil {
		return err
	}
	return syscall.Kill(-pid, sig)
}
