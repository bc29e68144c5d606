package testbed

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// StartControllerManager starts, beside the testbed's kube-controller-manager, a second one that
// runs only the named controllers (--controllers, names as kube-controller-manager spells
// them: statefulset-controller, ephemeral-volume-controller, resourceclaim-controller), with
// the first one's flags otherwise, serving nothing. Its process is named comm (at most 15
// characters: /proc/<pid>/comm), so that its CPU time can be read apart from the first one's. It
// returns once its controllers' caches are synced; StopControllerManager(c, comm) ends it. The
// testbed's own kube-controller-manager must not run these controllers too (TESTBED_KUBE_CONTROLLERS).
func StartControllerManager(ctx context.Context, c Config, comm string, controllers ...string) error {
	if len(comm) > 15 {
		return fmt.Errorf("process name %q: longer than 15 characters", comm)
	}
	exe, args, err := controllerManagerCommand(c)
	if err != nil {
		return err
	}
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--controllers="); ok {
			for _, name := range controllers {
				if !strings.Contains(","+v+",", ",-"+name+",") {
					return fmt.Errorf("the testbed's kube-controller-manager runs %s (--controllers=%s): start the testbed with TESTBED_KUBE_CONTROLLERS=*,-%s", name, v, name)
				}
			}
		}
	}
	if !slicesHasPrefix(args, "--controllers=") {
		return fmt.Errorf("the testbed's kube-controller-manager runs every controller: start the testbed with TESTBED_KUBE_CONTROLLERS=*,-%s", strings.Join(controllers, ",-"))
	}
	var own []string
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "--controllers="), strings.HasPrefix(a, "--secure-port="), strings.HasPrefix(a, "--enable-hostpath-provisioner="):
		default:
			own = append(own, a)
		}
	}
	own = append(own, "--controllers="+strings.Join(controllers, ","), "--secure-port=0")
	// The process's name is that of the file it was started from: a link named comm.
	link := filepath.Join(c.procsDir(), comm)
	if err := os.MkdirAll(c.procsDir(), 0o755); err != nil {
		return err
	}
	_ = os.Remove(link)
	if err := os.Symlink(exe, link); err != nil {
		return err
	}
	_ = os.Remove(c.ProcessLog(comm))
	logPath, err := StartProcess(c, comm, link, own...)
	if err != nil {
		return err
	}
	// Each controller waits for its informers, and logs it ("Waiting for caches to sync", then
	// "Caches are synced"): synced once every wait has ended, twice in a row 200 ms apart.
	deadline := time.Now().Add(time.Minute)
	seen := 0
	for time.Now().Before(deadline) {
		waiting, synced := countLines(logPath, "Waiting for caches to sync"), countLines(logPath, "Caches are synced")
		if waiting > 0 && synced >= waiting {
			if seen++; seen == 2 {
				return nil
			}
		} else {
			seen = 0
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s: its caches not synced after a minute (%s)", comm, logPath)
}

// StopControllerManager ends the kube-controller-manager StartControllerManager started as comm.
func StopControllerManager(c Config, comm string) error { return stopProcess(c, comm) }

// controllerManagerCommand is the executable and flags of the testbed's own
// kube-controller-manager, read from /proc.
func controllerManagerCommand(c Config) (string, []string, error) {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		comm, err := os.ReadFile(filepath.Join(d, "comm"))
		if err != nil || string(bytes.TrimSpace(comm)) != "kube-controller" {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !bytes.Contains(raw, []byte(c.WorkDir)) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		if !alive(pid) {
			continue
		}
		exe, err := os.Readlink(filepath.Join(d, "exe"))
		if err != nil {
			return "", nil, err
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		return exe, args[1:], nil
	}
	return "", nil, fmt.Errorf("no kube-controller-manager of the testbed in %s runs", c.WorkDir)
}

func slicesHasPrefix(args []string, prefix string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, prefix) {
			return true
		}
	}
	return false
}

// countLines counts the lines of the file at path that contain s.
func countLines(path, s string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			n++
		}
	}
	return n
}
