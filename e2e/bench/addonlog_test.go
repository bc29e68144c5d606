package bench

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jobset-addons/jobset-addons/e2e/testbed"
)

// workersStarted is when the add-on's process last started the workers of its controller: its
// caches synced and it leads. The testbed runs add-ons with --log-format console, whose lines
// begin with an RFC 3339 time in milliseconds; the bench runs on the same clock.
func workersStarted(tb testbed.Config, addon string) (time.Time, error) {
	f, err := os.Open(tb.ProcessLog(addon))
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	var last time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "Starting workers") || !strings.Contains(line, `"controller": "`+addon+`"`) {
			continue
		}
		ts, _, _ := strings.Cut(line, "\t")
		if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
			last = t
		}
	}
	if err := sc.Err(); err != nil {
		return time.Time{}, err
	}
	if last.IsZero() {
		return last, fmt.Errorf("no %q line of controller %s in %s", "Starting workers", addon, tb.ProcessLog(addon))
	}
	return last, nil
}

// benchRounds is how many rounds of ours against the bare loop a scenario runs in one testbed:
// $BENCH_ROUNDS, 3 by default. Tables show the median, and each round's ratio.
func benchRounds() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 3
}

// median of d (the upper one of an even count).
func median(d []time.Duration) time.Duration { return quantile(d, 0.5) }

// roundRatios lists, per round, baseline / ours as "0.91 0.88 0.95".
func roundRatios(ours, baseline []time.Duration) string {
	var parts []string
	for i := range ours {
		parts = append(parts, fmt.Sprintf("%.2f", baseline[i].Seconds()/ours[i].Seconds()))
	}
	return strings.Join(parts, " ")
}
