package testbed_test

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// The tutorial's page is its test's script: every ```console block of docs/tutorial.md holds
// commands (lines that begin with "$ ", continued by a trailing backslash) each followed by the
// output the page says the user sees. TestTutorial runs the commands in order and compares what
// they print with what the page shows, so the page and the cluster cannot drift apart.
//
// What varies from run to run is compared loosely (normalize): UIDs, timestamps, ages and
// durations, the random suffix of a pod's name, and the node a pod went to. An output line "..." stands for any number of lines:
// the page shows what matters and leaves the rest out; within a line, "..." stands for any text.
// A comment just before a block changes how its commands are checked:
//
//	<!-- test: retry -->          run again, for up to a minute, until the output matches
//	<!-- test: unordered -->      the output's lines in any order (Events of the same second)
//	<!-- test: after=NAME -->     then run the test's own check NAME (tutorialChecks)
//
// and before a ```yaml block, <!-- test: file=PATH --> says it shows the file PATH (from the
// checkout's root) as it is. Other blocks (```sh) are not run: make demo and what a reader types
// to set up.

// tutorialStep is one command of the page and the output it shows.
type tutorialStep struct {
	line      int // of the command in the page
	cmd       string
	want      []string
	retry     bool
	unordered bool
	after     string
	// wantFrom, wantTo: the lines of want in the page (0-based, half-open), for E2E_UPDATE_GOLDEN.
	wantFrom, wantTo int
}

var testMarker = regexp.MustCompile(`^<!-- test: (.*) -->$`)

// tutorialFile is a ```yaml block of the page that shows a file.
type tutorialFile struct {
	line     int // of the block's first line in the page
	path     string
	shown    []string
	from, to int // the lines of shown in the page (0-based, half-open)
}

// tutorialPageOf is what the page holds for the test.
type tutorialPageOf struct {
	lines []string
	steps []tutorialStep
	files []tutorialFile
}

// readTutorial reads the page's console blocks and the files it shows.
func readTutorial(path string) (*tutorialPageOf, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p := &tutorialPageOf{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p.lines = append(p.lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var marker string
	for i := 0; i < len(p.lines); i++ {
		l := p.lines[i]
		if m := testMarker.FindStringSubmatch(l); m != nil {
			marker = m[1]
			continue
		}
		switch {
		case strings.TrimSpace(l) == "```console":
			block, end, err := consoleBlock(p.lines, i+1, marker)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, i+1, err)
			}
			p.steps = append(p.steps, block...)
			i, marker = end, ""
		case strings.HasPrefix(marker, "file=") && strings.TrimSpace(l) == "```yaml":
			fb := tutorialFile{line: i + 1, path: strings.TrimPrefix(marker, "file="), from: i + 1}
			for i++; i < len(p.lines) && !strings.HasPrefix(p.lines[i], "```"); i++ {
				fb.shown = append(fb.shown, p.lines[i])
			}
			fb.to = i
			p.files = append(p.files, fb)
			marker = ""
		case strings.TrimSpace(l) != "":
			marker = ""
		}
	}
	return p, nil
}

// consoleBlock reads the steps of the console block whose first line is lines[from], and returns
// the index of its closing fence.
func consoleBlock(lines []string, from int, marker string) ([]tutorialStep, int, error) {
	var retry, unordered bool
	var after string
	for _, opt := range strings.Fields(marker) {
		switch {
		case opt == "retry":
			retry = true
		case opt == "unordered":
			unordered = true
		case strings.HasPrefix(opt, "after="):
			after = strings.TrimPrefix(opt, "after=")
		default:
			return nil, 0, fmt.Errorf("unknown test option %q", opt)
		}
	}
	var steps []tutorialStep
	for i := from; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "```"):
			if len(steps) == 0 {
				return nil, 0, fmt.Errorf("a console block without a command")
			}
			steps[len(steps)-1].after = after
			return steps, i, nil
		case strings.HasPrefix(l, "$ "):
			s := tutorialStep{line: i + 1, cmd: strings.TrimPrefix(l, "$ "), retry: retry, unordered: unordered}
			for strings.HasSuffix(s.cmd, `\`) && i+1 < len(lines) {
				i++
				s.cmd = strings.TrimSuffix(s.cmd, `\`) + "\n" + lines[i]
			}
			s.wantFrom, s.wantTo = i+1, i+1
			steps = append(steps, s)
		case len(steps) == 0:
			return nil, 0, fmt.Errorf("output before the first command: %q", l)
		default:
			s := &steps[len(steps)-1]
			s.want = append(s.want, l)
			s.wantTo = i + 1
		}
	}
	return nil, 0, fmt.Errorf("a console block that does not end")
}

// What varies between runs, replaced by a placeholder on both sides before comparing.
var varying = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "<uid>"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`), "<time>"},
	// A pod's name: its Job's name (which ends in the Job's index), maybe its completion index,
	// and five random characters.
	{regexp.MustCompile(`(-\d+)-[bcdfghjklmnpqrstvwxz2456789]{5}\b`), "$1-<random>"},
	{regexp.MustCompile(`\bkwok-node-\d+\b`), "<node>"},
	// Ages and durations: 0s, 12s, 1m5s, 3m, 2h1m.
	{regexp.MustCompile(`\b\d+(\.\d+)?(ms|s|m|h)(\d+(\.\d+)?(m|s))*\b`), "<duration>"},
}

// normalize is line as compared: what varies as placeholders, runs of blanks as one space.
func normalize(line string) string {
	for _, v := range varying {
		line = v.re.ReplaceAllString(line, v.with)
	}
	return strings.Join(strings.Fields(line), " ")
}

// outputMatches says whether got, the lines a command printed, is what the step shows: line by
// line once normalized, where a line "..." stands for any number of lines and "..." in a line for
// any text; for an unordered step, in any order.
func outputMatches(s tutorialStep, got []string) bool {
	w := make([]string, 0, len(s.want))
	for _, l := range s.want {
		w = append(w, normalize(l))
	}
	g := make([]string, 0, len(got))
	for _, l := range got {
		g = append(g, normalize(l))
	}
	if s.unordered {
		return sameLines(trimBlank(w), trimBlank(g))
	}
	return globLines(trimBlank(w), trimBlank(g))
}

func globLines(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "..." {
		for i := 0; i <= len(got); i++ {
			if globLines(want[1:], got[i:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && lineMatches(want[0], got[0]) && globLines(want[1:], got[1:])
}

// sameLines says whether each line of got matches a line of want of its own, in any order.
func sameLines(want, got []string) bool {
	if len(want) != len(got) {
		return false
	}
	used := make([]bool, len(got))
	for _, w := range want {
		found := false
		for i, g := range got {
			if !used[i] && lineMatches(w, g) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// lineMatches says whether got is the line want, where "..." in want stands for any text.
func lineMatches(want, got string) bool {
	if !strings.Contains(want, "...") {
		return want == got
	}
	parts := strings.Split(want, "...")
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(got)
}

// trimBlank drops the blank lines at the end.
func trimBlank(lines []string) []string {
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// updatePage writes the page with each step's output in place of what it shows, except where
// the page left lines out ("..."), and each file as it is: E2E_UPDATE_GOLDEN=1 captures a run
// into the page. files holds the files' lines by path.
func updatePage(path string, p *tutorialPageOf, got map[int][]string, files map[string][]string) error {
	type span struct {
		from, to int
		lines    []string
	}
	var spans []span
	for _, s := range p.steps {
		if g, ok := got[s.line]; ok && !elides(s.want) {
			spans = append(spans, span{s.wantFrom, s.wantTo, trimBlank(g)})
		}
	}
	for _, f := range p.files {
		spans = append(spans, span{f.from, f.to, files[f.path]})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].from < spans[j].from })
	var out []string
	next := 0
	for _, s := range spans {
		out = append(append(out, p.lines[next:s.from]...), s.lines...)
		next = s.to
	}
	out = append(out, p.lines[next:]...)
	return os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o644)
}

// elides says whether the page leaves something out of want ("...").
func elides(want []string) bool {
	for _, l := range want {
		if strings.Contains(l, "...") {
			return true
		}
	}
	return false
}
