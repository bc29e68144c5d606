package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// FactsFile is the name of a run's facts, written beside its logs.
const FactsFile = "facts.json"

// suiteSpec is one add-on's suite and the tests the matrix runs of it (`go test -run`).
type suiteSpec struct {
	Name string `json:"name"`
	Run  string `json:"run"`
}

// runFacts is what a run's `go test -json` logs do not hold: when, where and by which command
// it ran, the suites it ran, and per combination what the testbed was. With the logs beside
// it, it is all the results are written from (-render-from).
type runFacts struct {
	// Note says where the facts come from when the run did not write them itself.
	Note     string      `json:"note,omitempty"`
	Command  string      `json:"command"`
	Start    time.Time   `json:"start"`
	Seconds  float64     `json:"seconds"`
	Platform string      `json:"platform"` // GOOS/GOARCH
	CPUs     int         `json:"cpus"`
	Go       string      `json:"go"`
	Suites   []suiteSpec `json:"suites"`
	Combos   []*combo    `json:"combinations"`
}

// combo is one combination of the run.
type combo struct {
	Kube   string `json:"kube"`
	JobSet string `json:"jobset"`
	// Server is the version the apiserver reported; Tools the versions of every binary linked.
	Server string   `json:"server,omitempty"`
	Tools  []string `json:"tools"`
	// Ran are the suites started on it, in order; each one's log is logName's.
	Ran []string `json:"ran"`
	// SuiteErrs is why a suite failed outside its tests, by suite, as the run saw it (go test's
	// exit status is in no log).
	SuiteErrs map[string]string `json:"suiteErrors,omitempty"`
	// Err is why the combination could not run at all (the testbed did not start).
	Err string `json:"error,omitempty"`
	// Seconds is how long the combination took, the testbed's start and stop included.
	Seconds float64 `json:"seconds"`
	// Suites are the results, read from the logs.
	Suites map[string]*suiteResult `json:"-"`
}

// logName is the file, in the run's log directory, of suite's `go test -json` on kube-jobset.
func logName(kube, jobset, suite string) string {
	return fmt.Sprintf("%s-%s-%s.json", kube, jobset, suite)
}

// writeFacts writes f into dir, replacing the facts of an earlier run.
func writeFacts(dir string, f *runFacts) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, FactsFile), append(b, '\n'), 0o644)
}

// loadRun reads the facts of the run whose logs are in dir, and each suite's results from its
// log. A suite the facts say ran and whose log is missing is an error, unless the run recorded
// why it failed (its log could not be made).
func loadRun(dir string) (*runFacts, error) {
	b, err := os.ReadFile(filepath.Join(dir, FactsFile))
	if err != nil {
		return nil, err
	}
	f := &runFacts{}
	if err := json.Unmarshal(b, f); err != nil {
		return nil, fmt.Errorf("%s: %w", FactsFile, err)
	}
	for _, c := range f.Combos {
		c.Suites = map[string]*suiteResult{}
		for _, s := range c.Ran {
			res, err := readLog(filepath.Join(dir, logName(c.Kube, c.JobSet, s)))
			switch {
			case errors.Is(err, fs.ErrNotExist) && c.SuiteErrs[s] != "":
				res = &suiteResult{}
			case err != nil:
				return nil, err
			}
			if msg := c.SuiteErrs[s]; msg != "" {
				res.Failed = msg
			}
			c.Suites[s] = res
		}
	}
	return f, nil
}

// readLog reads a suite's results from its `go test -json` log.
func readLog(path string) (*suiteResult, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	res := &suiteResult{}
	res.Tests, res.Failed = readEvents(file, io.Discard)
	return res, nil
}
