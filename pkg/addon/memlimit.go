package addon

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// cgroupMemoryMax is the memory limit of the container (cgroup v2) the process runs in.
const cgroupMemoryMax = "/sys/fs/cgroup/memory.max"

// memoryLimitShare is the share of the container's memory limit the Go heap is held under. The
// rest is for what the Go runtime does not count: the binary's pages (30 MiB of an add-on's RSS).
const memoryLimitShare = 0.85

// setMemoryLimit gives the Go runtime a soft memory limit of memoryLimitShare of the container's
// memory limit, unless $GOMEMLIMIT sets one or there is no limit. Without it, the heap may grow
// to twice what is live between two collections (GOGC=100), and a process whose live heap fits
// the limit is killed for memory when it momentarily does not (the chart's limit is 256Mi;
// make bench ADDON=scale). It returns the limit set, 0 if none.
func setMemoryLimit(path string) (int64, error) {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return 0, nil
	}
	limit, err := readMemoryMax(path)
	if err != nil || limit == 0 {
		return 0, err
	}
	soft := int64(float64(limit) * memoryLimitShare)
	debug.SetMemoryLimit(soft)
	return soft, nil
}

// readMemoryMax reads a cgroup v2 memory.max: its bytes, 0 for "max" or no such file.
func readMemoryMax(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	v := strings.TrimSpace(string(b))
	if v == "max" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s: %q is not a memory limit", path, v)
	}
	return n, nil
}
