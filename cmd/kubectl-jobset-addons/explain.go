package main

import (
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/spf13/pflag"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

const explainUsage = `usage: kubectl jobset-addons explain ADD-ON[.ANNOTATION[.FIELD...]]

Prints what an add-on's annotations hold, as kubectl explain does for API fields: each
annotation the user writes, where it goes, its type, and its documentation; for a structured
annotation its fields, and for each field its type, allowed values and documentation. The
text is the doc comments of pkg/contract, the same as docs/reference.md.

  kubectl jobset-addons explain volumeclaims
  kubectl jobset-addons explain volumeclaims.policies
  kubectl jobset-addons explain volumeclaims.policies.retentionPolicy.whenComplete
  kubectl jobset-addons explain sequencer.depends-on`

// annotation is one annotation a user writes.
type annotation struct {
	addOn, name, key string
	// onJobTemplate: on spec.replicatedJobs[].template.metadata, not on the JobSet.
	onJobTemplate bool
	// typ is what its value parses to; format says what a string holds, when it says more
	// than the type.
	typ    reflect.Type
	format string
}

// annotations are the annotations users write, by add-on, in the order explain lists them.
var annotations = []annotation{
	{addOn: "volumeclaims", name: "policies", key: contract.PoliciesAnnotationKey, typ: reflect.TypeFor[[]contract.VolumeClaimPolicy]()},
	{addOn: "resourceclaims", name: "templates", key: contract.TemplatesAnnotationKey, onJobTemplate: true, typ: reflect.TypeFor[[]contract.ResourceClaimTemplate]()},
	{addOn: "sequencer", name: "execution-policy", key: contract.ExecutionPolicyAnnotationKey, typ: reflect.TypeFor[contract.ExecutionPolicy]()},
	{addOn: "sequencer", name: "wait-for", key: contract.WaitForAnnotationKey, typ: reflect.TypeFor[contract.DependencyStatus]()},
	{addOn: "sequencer", name: "depends-on", key: contract.DependsOnAnnotationKey, onJobTemplate: true, typ: reflect.TypeFor[[]contract.Dependency]()},
	{addOn: "sequencer", name: "start-barrier", key: contract.StartBarrierAnnotationKey, typ: reflect.TypeFor[contract.StartBarrier]()},
	{addOn: "sequencer", name: "start-barrier-timeout", key: contract.StartBarrierTimeoutAnnotationKey, typ: reflect.TypeFor[string](), format: "a Go duration, such as 10m"},
	{addOn: "podgroups", name: "scheduler", key: contract.SchedulerAnnotationKey, typ: reflect.TypeFor[contract.Scheduler]()},
	{addOn: "podgroups", name: "queue-name", key: contract.VolcanoQueueNameAnnotationKey, typ: reflect.TypeFor[string](), format: "a Volcano queue name"},
	{addOn: "podgroups", name: "network-topology", key: contract.NetworkTopologyAnnotationKey, typ: reflect.TypeFor[contract.NetworkTopology]()},
	{addOn: "podgroups", name: "topology-key", key: contract.TopologyKeyAnnotationKey, typ: reflect.TypeFor[string](), format: "a node label key"},
	{addOn: "podgroups", name: "composite", key: contract.CompositeAnnotationKey, typ: reflect.TypeFor[bool]()},
	{addOn: "podgroups", name: "schedule-timeout-seconds", key: contract.ScheduleTimeoutAnnotationKey, typ: reflect.TypeFor[int32]()},
}

// contractPkg is the import path of package contract: its types are explained field by field.
var contractPkg = reflect.TypeFor[contract.Scheduler]().PkgPath()

// addOns are the add-ons, in order.
var addOns = []string{"volumeclaims", "resourceclaims", "sequencer", "podgroups"}

// Explain is `kubectl jobset-addons explain`: it returns the exit status.
func Explain(args []string, out, errOut io.Writer) int {
	fs := pflag.NewFlagSet("explain", pflag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Usage = func() { fmt.Fprintln(errOut, explainUsage) }
	if err := fs.Parse(args); err != nil {
		return helpOr2(err)
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	if err := explain(out, fs.Arg(0)); err != nil {
		fmt.Fprintln(errOut, "kubectl jobset-addons explain:", err)
		return 1
	}
	return 0
}

func explain(out io.Writer, path string) error {
	parts := strings.Split(path, ".")
	var of []annotation
	for _, a := range annotations {
		if a.addOn == parts[0] {
			of = append(of, a)
		}
	}
	if len(of) == 0 {
		return fmt.Errorf("no add-on %q: one of %s", parts[0], strings.Join(addOns, ", "))
	}
	if len(parts) == 1 {
		explainAddOn(out, parts[0], of)
		return nil
	}
	for _, a := range of {
		if a.name == parts[1] {
			return explainField(out, a, parts[2:])
		}
	}
	names := make([]string, len(of))
	for i, a := range of {
		names[i] = a.name
	}
	return fmt.Errorf("%s has no annotation %q: one of %s", parts[0], parts[1], strings.Join(names, ", "))
}

func explainAddOn(out io.Writer, addOn string, of []annotation) {
	fmt.Fprintf(out, "ADD-ON: %s\n\nANNOTATIONS:\n", addOn)
	for i, a := range of {
		if i > 0 {
			fmt.Fprintln(out)
		}
		fmt.Fprintf(out, "  %s\t<%s>\n%s", a.name, typeName(a.typ), enum(a.typ))
		fmt.Fprintf(out, "%s", wrap(a.key+", on "+a.where()+".", 4))
		fmt.Fprintf(out, "%s", wrap(contract.KeyDoc(a.key), 4))
	}
}

func (a annotation) where() string {
	if a.onJobTemplate {
		return "each ReplicatedJob's Job template (spec.replicatedJobs[].template.metadata.annotations)"
	}
	return "the JobSet (metadata.annotations)"
}

// explainField prints annotation a, or the field at path below it.
func explainField(out io.Writer, a annotation, path []string) error {
	t, doc, name := a.typ, contract.KeyDoc(a.key), a.name
	for i, p := range path {
		st := structOf(t)
		if st == nil || st.PkgPath() != contractPkg {
			return fmt.Errorf("%s has no field %q: it is %s", strings.Join(append([]string{a.addOn, a.name}, path[:i]...), "."), p, describe(t))
		}
		f, ok := jsonField(st, p)
		if !ok {
			return fmt.Errorf("%s has no field %q: its fields are %s", strings.Join(append([]string{a.addOn, a.name}, path[:i]...), "."), p, strings.Join(jsonNames(st), ", "))
		}
		t, doc, name = f.Type, contract.Doc(st.Name()+"."+p), p
	}
	fmt.Fprintf(out, "ANNOTATION: %s\nON:         %s\n\n", a.key, a.where())
	fmt.Fprintf(out, "FIELD: %s <%s>\n", name, typeName(t))
	if a.format != "" && len(path) == 0 {
		fmt.Fprintf(out, "FORMAT: %s\n", a.format)
	}
	if n := named(t); n.PkgPath() == contractPkg && len(contract.Values(n.Name())) > 0 {
		fmt.Fprintf(out, "ENUM: %s\n", strings.Join(contract.Values(n.Name()), ", "))
	}
	fmt.Fprintf(out, "\nDESCRIPTION:\n%s", wrap(doc, 4))
	n := named(t)
	switch {
	case n.PkgPath() == contractPkg && contract.Doc(n.Name()) != "":
		fmt.Fprintf(out, "\n%s", wrap(contract.Doc(n.Name()), 4))
	case n.PkgPath() != contractPkg && n.PkgPath() != "":
		fmt.Fprintf(out, "\n%s", wrap(describe(t)+".", 4))
	}
	if st := structOf(t); st != nil && st.PkgPath() == contractPkg {
		fmt.Fprintf(out, "\nFIELDS:\n")
		for i, n := range jsonNames(st) {
			f, _ := jsonField(st, n)
			if i > 0 {
				fmt.Fprintln(out)
			}
			fmt.Fprintf(out, "  %s\t<%s>\n%s%s", n, typeName(f.Type), enum(f.Type), wrap(contract.Doc(st.Name()+"."+n), 4))
		}
	}
	return nil
}

// enum is the line of a list that gives the values of an enum type; "" for another type.
func enum(t reflect.Type) string {
	if n := named(t); n.PkgPath() == contractPkg && len(contract.Values(n.Name())) > 0 {
		return "    enum: " + strings.Join(contract.Values(n.Name()), ", ") + "\n"
	}
	return ""
}

// named is t without pointers and slices.
func named(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	return t
}

// structOf is the struct type t holds (through pointers and slices), or nil.
func structOf(t reflect.Type) reflect.Type {
	if t = named(t); t.Kind() == reflect.Struct {
		return t
	}
	return nil
}

// describe says what a type from outside pkg/contract is, and where its fields are explained.
func describe(t reflect.Type) string {
	n := named(t)
	if n.PkgPath() == contractPkg || n.PkgPath() == "" {
		return "a " + typeName(t)
	}
	explainAs := map[string]string{
		"PersistentVolumeClaim": "kubectl explain persistentvolumeclaim",
		"ObjectMeta":            "kubectl explain persistentvolumeclaim.metadata",
		"ResourceClaimSpec":     "kubectl explain resourceclaim.spec",
	}
	s := fmt.Sprintf("a Kubernetes %s (%s)", n.Name(), n.PkgPath())
	if e, ok := explainAs[n.Name()]; ok {
		s += ": see " + e
	}
	return s
}

// typeName names a type as kubectl explain does: string, integer, boolean, []T, or T.
func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return typeName(t.Elem())
	case reflect.Slice:
		return "[]" + typeName(t.Elem())
	case reflect.Map:
		return "map[string]" + typeName(t.Elem())
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "integer"
	}
	return t.Name()
}

// jsonNames are the JSON names of a struct's fields, in order.
func jsonNames(st reflect.Type) []string {
	var out []string
	for i := range st.NumField() {
		if n := jsonName(st.Field(i)); n != "" {
			out = append(out, n)
		}
	}
	return out
}

func jsonField(st reflect.Type, name string) (reflect.StructField, bool) {
	for i := range st.NumField() {
		if f := st.Field(i); jsonName(f) == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func jsonName(f reflect.StructField) string {
	n, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if n == "-" || !f.IsExported() {
		return ""
	}
	return n
}

// wrap is text in lines of at most 80 columns, indented; "" for no text.
func wrap(text string, indent int) string {
	var b strings.Builder
	line := 0
	for _, w := range strings.Fields(text) {
		switch {
		case line == 0:
			b.WriteString(strings.Repeat(" ", indent) + w)
			line = indent + len(w)
		case line+1+len(w) > 80:
			b.WriteString("\n" + strings.Repeat(" ", indent) + w)
			line = indent + len(w)
		default:
			b.WriteString(" " + w)
			line += 1 + len(w)
		}
	}
	if line > 0 {
		b.WriteString("\n")
	}
	return b.String()
}
