package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/jobset-addons/jobset-addons/pkg/addon/checks"
)

const lintUsage = `usage: kubectl jobset-addons lint -f FILE|DIR|- [-f ...] [--output text|json]

Checks the jobset-addons annotations of manifests before they are applied, offline, with the
same code as the add-ons' webhooks: each annotation parsed with the path of every bad field,
and checked against the JobSet (a volume template no container mounts, a claim template for a
container that does not exist, a stage cycle, a start barrier on a Job that cannot run all its
pods at once...), after what the add-ons' and JobSet's own mutating webhooks would add. Each
problem is printed as FILE: KIND/NAME: FIELD: MESSAGE, with the webhook's own message; the
Warnings the webhooks would give are printed too, marked "warning:".

It reads JobSets; Kubeflow Trainer TrainingRuntimes and ClusterTrainingRuntimes, whose
spec.template is the JobSet each TrainJob gets (its paths are the runtime's, its names are
built with the runtime's name where the TrainJob's will be); and TrainJobs whose runtime is in
the input too. Other kinds are skipped. -f takes files, directories (their .yaml, .yml and .json
files) and - (standard input); a file may hold several documents.

Each object an add-on would make from the manifest (a volumeclaims PVC, a resourceclaims
ResourceClaim, a pod with the start barrier's init container, with the barrier's default image
and resources) is validated as the API server validates it, with its own code at this release's
Kubernetes version and default feature gates; a manifest without a namespace is taken to be
applied to "default". Its problems are printed at the path of the template it comes from.

Not checked offline, because they need the cluster (the webhooks check them when the JobSet is
created): the namespace's ResourceQuota and LimitRanges, Pod Security, other admission webhooks
and policies; the PodGroups and Workloads of podgroups (their CRDs' schemas are the cluster's);
whether a scheduler's PodGroup CRD, the Workload API or CompositePodGroup is served; the
controllers' configuration (podgroups' scheduler names, the barrier's image and resources,
resourceclaims' feature gate); priority class values; whether the apiserver keeps a PodGroup's
claims; and what Trainer changes in its JobSet (numNodes).

Exit status: 0 when nothing is wrong (warnings allowed), 1 when a problem was found, 2 when the
input cannot be read.`

// finding is one problem or Warning of one object.
type finding struct {
	File    string `json:"file"`
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
	Warning bool   `json:"warning,omitempty"`
}

func (f finding) String() string {
	switch {
	case f.Warning:
		return fmt.Sprintf("%s: %s/%s: warning: %s", f.File, f.Kind, f.Name, f.Message)
	case f.Field == "":
		return fmt.Sprintf("%s: %s/%s: %s", f.File, f.Kind, f.Name, f.Message)
	}
	return fmt.Sprintf("%s: %s/%s: %s: %s", f.File, f.Kind, f.Name, f.Field, f.Message)
}

// Lint is `kubectl jobset-addons lint`: it returns the exit status.
func Lint(args []string, stdin io.Reader, out, errOut io.Writer) int {
	fs := pflag.NewFlagSet("lint", pflag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Usage = func() { fmt.Fprintln(errOut, lintUsage) }
	files := fs.StringArrayP("filename", "f", nil, "a manifest file, a directory of them, or - for standard input (repeatable)")
	output := fs.StringP("output", "o", "text", "text, or json (a list of {file, kind, name, field, message, warning})")
	if err := fs.Parse(args); err != nil {
		return helpOr2(err)
	}
	if len(*files) == 0 || fs.NArg() > 0 || (*output != "text" && *output != "json") {
		fs.Usage()
		return 2
	}
	docs, err := readDocuments(*files, stdin)
	if err != nil {
		fmt.Fprintln(errOut, "kubectl jobset-addons lint:", err)
		return 2
	}
	var findings []finding
	for _, o := range objects(docs) {
		if o.note != "" {
			fmt.Fprintf(errOut, "%s: %s/%s: %s\n", o.file, o.kind, o.name, o.note)
		}
		findings = append(findings, lintObject(o)...)
	}
	if err := report(out, *output, findings); err != nil {
		fmt.Fprintln(errOut, "kubectl jobset-addons lint:", err)
		return 2
	}
	for _, f := range findings {
		if !f.Warning {
			return 1
		}
	}
	return 0
}

func report(out io.Writer, format string, findings []finding) error {
	if format == "json" {
		if findings == nil {
			findings = []finding{}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(findings)
	}
	for _, f := range findings {
		if _, err := fmt.Fprintln(out, f); err != nil {
			return err
		}
	}
	return nil
}

// lintObject is every problem and Warning of one object.
func lintObject(o object) []finding {
	at := finding{File: o.file, Kind: o.kind, Name: o.name}
	if o.err != nil {
		at.Message = o.err.Error()
		return []finding{at}
	}
	if o.js == nil {
		return nil
	}
	errs, warnings := checks.CheckWith(o.js, apiServerValidation)
	var out []finding
	for _, e := range errs {
		f := at
		f.Field, f.Message = o.prefix+e.Field, e.ErrorBody()
		out = append(out, f)
	}
	for _, w := range warnings {
		f := at
		f.Message, f.Warning = w, true
		out = append(out, f)
	}
	return out
}

// helpOr2 is the exit status of a command whose flags did not parse: 0 for --help, else 2.
func helpOr2(err error) int {
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	return 2
}
