package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// readDigests reads what writeImages printed and returns each add-on's index digest at version.
func readDigests(file, version string) (map[string]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(data), "\n") {
		ref, d, ok := strings.Cut(l, " ")
		name, tag, ok2 := strings.Cut(ref, ":")
		if ok && ok2 && tag == version {
			out[name] = d
		}
	}
	for _, a := range images {
		if out[a] == "" {
			return nil, fmt.Errorf("%s: no digest of %s:%s", file, a, version)
		}
	}
	return out, nil
}

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// pinValues pins every add-on's image in the chart's values.yaml: repository REGISTRY/<name>,
// tag VERSION (for the reader) and digest (what is pulled). It edits the lines of each
// add-on's image block and keeps every comment; a block without all three keys is an error.
func pinValues(values []byte, registry, version string, digests map[string]string) ([]byte, error) {
	lines := strings.SplitAfter(string(values), "\n")
	set := map[string]map[string]int{} // add-on -> key -> times set
	block, inImage := "", false
	for i, l := range lines {
		trimmed := strings.TrimRight(l, "\n")
		switch {
		case trimmed != "" && !strings.HasPrefix(trimmed, " ") && !strings.HasPrefix(trimmed, "#"):
			block, inImage = strings.TrimSuffix(trimmed, ":"), false
		case trimmed == "  image:":
			inImage = true
		case strings.HasPrefix(trimmed, "  ") && !strings.HasPrefix(trimmed, "    "):
			inImage = false
		}
		d, ok := digests[block]
		if !inImage || !ok || !strings.HasPrefix(trimmed, "    ") {
			continue
		}
		key, _, _ := strings.Cut(strings.TrimSpace(trimmed), ":")
		var value string
		switch key {
		case "repository":
			value = registry + "/" + block
		case "tag":
			value = fmt.Sprintf("%q", version)
		case "digest":
			if !digestRE.MatchString(d) {
				return nil, fmt.Errorf("%s: %q is not a sha256 digest", block, d)
			}
			value = d
		default:
			continue
		}
		if set[block] == nil {
			set[block] = map[string]int{}
		}
		set[block][key]++
		lines[i] = "    " + key + ": " + value + "\n"
	}
	for name := range digests {
		for _, key := range []string{"repository", "tag", "digest"} {
			if n := set[name][key]; n != 1 {
				return nil, fmt.Errorf("values.yaml: %s.image.%s found %d times, want once", name, key, n)
			}
		}
	}
	return []byte(strings.Join(lines, "")), nil
}

func pinValuesFile(file, registry, version, digestsFile string) error {
	digests, err := readDigests(digestsFile, version)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	pinned, err := pinValues(data, registry, version, digests)
	if err != nil {
		return err
	}
	return os.WriteFile(file, pinned, 0o644)
}

// repointChart copies the packaged chart in to out with its images' repositories moved to
// registry (digests and everything else unchanged): the chart that release-push pushes to a
// registry other than the one make release was given (tar headers kept as helm wrote them); to
// the registry make release was given, it is a copy of the packaged chart.
func repointChart(in, out, registry, version string, digests map[string]string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Comment = zr.Comment
	tw := tar.NewWriter(zw)
	found, changed := false, false
	err = eachTarEntry(zr, func(h *tar.Header, r io.Reader) error {
		body, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if strings.Count(h.Name, "/") == 1 && strings.HasSuffix(h.Name, "/values.yaml") {
			repointed, err := pinValues(body, registry, version, digests)
			if err != nil {
				return err
			}
			changed = !bytes.Equal(repointed, body)
			body, h.Size, found = repointed, int64(len(repointed)), true
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = tw.Write(body)
		return err
	})
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("%s has no values.yaml", in)
	}
	if !changed { // the registry make release was given: helm's own archive, byte for byte
		data, err := os.ReadFile(in)
		if err != nil {
			return err
		}
		return os.WriteFile(out, data, 0o644)
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

// errStop ends eachTarEntry early, without an error.
var errStop = errors.New("stop")

// eachTarEntry calls fn for every entry of the tar stream r, in order, until fn returns an
// error (errStop: stop, no error).
func eachTarEntry(r io.Reader, fn func(h *tar.Header, r io.Reader) error) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(h, tr); err != nil {
			if err == errStop {
				return nil
			}
			return err
		}
	}
}
