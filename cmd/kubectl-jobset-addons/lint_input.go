package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"
)

// trainerGroup is Kubeflow Trainer's API group, whose runtimes hold a JobSet template.
const trainerGroup = "trainer.kubeflow.org"

// object is one object of lint's input that holds add-on annotations: a JobSet, or the JobSet
// a Kubeflow Trainer object makes.
type object struct {
	file, kind, name string
	// js is the JobSet to check; nil when the object could not be read (err).
	js  *jobsetv1alpha2.JobSet
	err error
	// prefix is the path of the JobSet's fields in the object: "" for a JobSet,
	// "spec.template." for a runtime's JobSet template.
	prefix string
	// note, when not empty, says why the object was not checked.
	note string
}

// document is one YAML or JSON document of the input, as read.
type document struct {
	file string
	raw  map[string]any
}

// readDocuments reads every document of the files, directories (their .yaml, .yml and .json
// files, recursively) and "-" (stdin) in paths. An error is input that cannot be read.
func readDocuments(paths []string, stdin io.Reader) ([]document, error) {
	var docs []document
	for _, p := range paths {
		files, err := expand(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			var r io.Reader = stdin
			if f != "-" {
				data, err := os.ReadFile(f)
				if err != nil {
					return nil, err
				}
				r = bytes.NewReader(data)
			}
			d, err := splitDocuments(f, r)
			if err != nil {
				return nil, err
			}
			docs = append(docs, d...)
		}
	}
	return docs, nil
}

// expand is the files a path names: itself, or a directory's manifests, in name order.
func expand(p string) ([]string, error) {
	if p == "-" {
		return []string{p}, nil
	}
	info, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{p}, nil
	}
	var files []string
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			if !d.IsDir() {
				files = append(files, path)
			}
		}
		return nil
	})
	return files, err
}

// splitDocuments reads the documents of one file, skipping empty ones and unrolling a List.
func splitDocuments(file string, r io.Reader) ([]document, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var docs []document
	for {
		data, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		var raw map[string]any
		if err := yaml.Unmarshal(data, &raw); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if raw == nil {
			continue
		}
		if items, ok := raw["items"].([]any); ok && strings.HasSuffix(str(raw, "kind"), "List") {
			for _, item := range items {
				if m, ok := item.(map[string]any); ok {
					docs = append(docs, document{file: file, raw: m})
				}
			}
			continue
		}
		docs = append(docs, document{file: file, raw: raw})
	}
}

// objects are the documents that hold add-on annotations, as JobSets: JobSets, Trainer
// TrainingRuntimes and ClusterTrainingRuntimes (their spec.template), and TrainJobs whose
// runtime is among the documents (its template, named as the TrainJob). Other kinds are left
// out.
func objects(docs []document) []object {
	var out []object
	for _, d := range docs {
		group, _, _ := strings.Cut(str(d.raw, "apiVersion"), "/")
		kind := str(d.raw, "kind")
		o := object{file: d.file, kind: kind, name: str(d.raw, "metadata", "name")}
		switch {
		case group == jobsetv1alpha2.GroupVersion.Group && kind == "JobSet":
			o.js, o.err = decodeJobSet(d.raw)
		case group == trainerGroup && (kind == "TrainingRuntime" || kind == "ClusterTrainingRuntime"):
			o.js, o.err = runtimeJobSet(d.raw)
			o.prefix = "spec.template."
		case group == trainerGroup && kind == "TrainJob":
			o.js, o.note, o.err = trainJobSet(d.raw, docs)
		default:
			continue
		}
		out = append(out, o)
	}
	return out
}

func decodeJobSet(raw map[string]any) (*jobsetv1alpha2.JobSet, error) {
	schemaDefaults(get(raw, "spec"))
	js := &jobsetv1alpha2.JobSet{}
	if err := convert(raw, js); err != nil {
		return nil, fmt.Errorf("cannot be read as a JobSet: %w", err)
	}
	return js, nil
}

// runtimeJobSet is the JobSet a Trainer runtime's spec.template gives, named as the runtime.
func runtimeJobSet(raw map[string]any) (*jobsetv1alpha2.JobSet, error) {
	var tmpl struct {
		Metadata metav1.ObjectMeta         `json:"metadata"`
		Spec     jobsetv1alpha2.JobSetSpec `json:"spec"`
	}
	if t, ok := get(raw, "spec", "template").(map[string]any); ok {
		schemaDefaults(t["spec"])
		if err := convert(t, &tmpl); err != nil {
			return nil, fmt.Errorf("spec.template cannot be read as a JobSet template: %w", err)
		}
	}
	js := &jobsetv1alpha2.JobSet{ObjectMeta: tmpl.Metadata, Spec: tmpl.Spec}
	js.Name, js.Namespace = str(raw, "metadata", "name"), str(raw, "metadata", "namespace")
	return js, nil
}

// trainJobSet is the JobSet of a TrainJob whose runtime is among docs: the runtime's, named as
// the TrainJob, with the TrainJob's spec.annotations (older Trainers) over the runtime's.
func trainJobSet(raw map[string]any, docs []document) (*jobsetv1alpha2.JobSet, string, error) {
	name, kind := str(raw, "spec", "runtimeRef", "name"), str(raw, "spec", "runtimeRef", "kind")
	if kind == "" {
		kind = "ClusterTrainingRuntime"
	}
	for _, d := range docs {
		if str(d.raw, "kind") != kind || str(d.raw, "metadata", "name") != name {
			continue
		}
		js, err := runtimeJobSet(d.raw)
		if err != nil {
			return nil, "", fmt.Errorf("its %s %s: %w", kind, name, err)
		}
		js.Name, js.Namespace = str(raw, "metadata", "name"), str(raw, "metadata", "namespace")
		if a, ok := get(raw, "spec", "annotations").(map[string]any); ok {
			if js.Annotations == nil {
				js.Annotations = map[string]string{}
			}
			for k, v := range a {
				js.Annotations[k] = fmt.Sprint(v)
			}
		}
		return js, "", nil
	}
	return nil, fmt.Sprintf("not checked: its %s %q is not among the input (give both)", kind, name), nil
}

// schemaDefaults sets, in an unstructured JobSet spec, the defaults of JobSet's CRD schema that
// the API server applies before any webhook sees the JobSet: a ReplicatedJob's replicas is 1
// when left out.
func schemaDefaults(spec any) {
	rjs, _ := get(map[string]any{"spec": spec}, "spec", "replicatedJobs").([]any)
	for _, rj := range rjs {
		if m, ok := rj.(map[string]any); ok {
			if _, set := m["replicas"]; !set {
				m["replicas"] = int64(1)
			}
		}
	}
}

// convert decodes an unstructured object into out, as the API server reads JSON.
func convert(raw map[string]any, out any) error {
	data, err := yaml.Marshal(raw)
	if err != nil {
		return err
	}
	return yaml.Unmarshal(data, out)
}

// get is the value at path in an unstructured object, or nil.
func get(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[p]
	}
	return v
}

// str is the string at path, or "".
func str(m map[string]any, path ...string) string {
	s, _ := get(m, path...).(string)
	return s
}
