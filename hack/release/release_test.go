package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"sigs.k8s.io/yaml"
)

func testDigests() map[string]string {
	d := map[string]string{}
	for i, a := range addons {
		d[a] = "sha256:" + strings.Repeat(string(rune('a'+i)), 64)
	}
	return d
}

// TestPinValues pins the chart's own values.yaml and reads it back as helm would.
func TestPinValues(t *testing.T) {
	values, err := os.ReadFile("../../charts/jobset-addons/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	digests := testDigests()
	pinned, err := pinValues(values, "127.0.0.1:5000/jsa", "v0.2.0", digests)
	if err != nil {
		t.Fatal(err)
	}
	var all map[string]any
	if err := yaml.Unmarshal(pinned, &all); err != nil {
		t.Fatal(err)
	}
	for _, a := range addons {
		var got struct {
			Image struct{ Repository, Tag, Digest, PullPolicy string }
		}
		block, _ := yaml.Marshal(all[a])
		if err := yaml.Unmarshal(block, &got); err != nil {
			t.Fatal(err)
		}
		img := got.Image
		if img.Repository != "127.0.0.1:5000/jsa/"+a || img.Tag != "v0.2.0" || img.Digest != digests[a] || img.PullPolicy != "IfNotPresent" {
			t.Errorf("%s.image = %+v, want repository 127.0.0.1:5000/jsa/%s, tag v0.2.0, digest %s, pullPolicy unchanged", a, img, a, digests[a])
		}
	}
	if a, b := strings.Count(string(values), "\n"), strings.Count(string(pinned), "\n"); a != b {
		t.Errorf("pinning changed the number of lines from %d to %d", a, b)
	}
	// Pinning again (release-push to another registry) moves only the repositories.
	again, err := pinValues(pinned, "registry.example:5000/mirror", "v0.2.0", digests)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.ReplaceAll(string(pinned), "127.0.0.1:5000/jsa/", "registry.example:5000/mirror/"); string(again) != want {
		t.Errorf("re-pinning changed more than the repositories")
	}
}

func TestPinValuesRefuses(t *testing.T) {
	values, err := os.ReadFile("../../charts/jobset-addons/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	noDigestKey := bytes.Replace(values, []byte("    digest: \"\"\n"), nil, 1)
	if _, err := pinValues(noDigestKey, "r", "v1.0.0", testDigests()); err == nil || !strings.Contains(err.Error(), "volumeclaims.image.digest found 0 times") {
		t.Errorf("values without volumeclaims.image.digest: err = %v, want it named", err)
	}
	bad := testDigests()
	bad["sequencer"] = "latest"
	if _, err := pinValues(values, "r", "v1.0.0", bad); err == nil || !strings.Contains(err.Error(), "not a sha256 digest") {
		t.Errorf("digest latest: err = %v, want refused", err)
	}
}

func TestCompareDigests(t *testing.T) {
	a := []byte("podgroups:v0.2.0 sha256:aa\nsequencer:v0.2.0 sha256:bb\n")
	if err := compareDigests(a, a); err != nil {
		t.Errorf("same digests: %v", err)
	}
	b := []byte("podgroups:v0.2.0 sha256:aa\nsequencer:v0.2.0 sha256:cc\n")
	err := compareDigests(a, b)
	if err == nil || !strings.Contains(err.Error(), "first build:  sequencer:v0.2.0 sha256:bb\n  second build: sequencer:v0.2.0 sha256:cc") ||
		strings.Contains(err.Error(), "podgroups") {
		t.Errorf("different digests: err = %v, want the sequencer line of each named, and only it", err)
	}
	if err := compareDigests(nil, nil); err == nil {
		t.Error("two empty lists compared equal: an empty build must not pass")
	}
}

// TestBase: the base image is the same bytes every time, for both platforms, running as nonroot.
func TestBase(t *testing.T) {
	dir := t.TempDir()
	ref1, err := writeBase(filepath.Join(dir, "1"))
	if err != nil {
		t.Fatal(err)
	}
	ref2, err := writeBase(filepath.Join(dir, "2"))
	if err != nil {
		t.Fatal(err)
	}
	if ref1 != ref2 || !strings.HasPrefix(ref1, baseName+"@sha256:") {
		t.Errorf("two bases: %s and %s, want one digest", ref1, ref2)
	}
	idx, err := baseIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, m := range im.Manifests {
		platforms = append(platforms, m.Platform.String())
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Config.User != "65532:65532" || cf.Platform().String() != m.Platform.String() {
			t.Errorf("%s: user %q platform %s", m.Platform, cf.Config.User, cf.Platform())
		}
	}
	if got := strings.Join(platforms, ","); got != "linux/amd64,linux/arm64" {
		t.Errorf("platforms %s", got)
	}
	// ko finds the base by digest among the top-level manifests of KOCACHE/img: the index and
	// each platform's image.
	data, err := os.ReadFile(filepath.Join(dir, "1", "img", "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var top v1.IndexManifest
	if err := yaml.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	if len(top.Manifests) != 3 || "jobset-addons.local/base@"+top.Manifests[0].Digest.String() != ref1 {
		t.Errorf("KOCACHE/img lists %d manifests, first %s; want the index %s and its 2 images", len(top.Manifests), top.Manifests[0].Digest, ref1)
	}
}

func TestKrew(t *testing.T) {
	dist := t.TempDir()
	for i, p := range pluginPlatforms {
		if err := os.WriteFile(filepath.Join(dist, pluginArchive("v0.2.0", p[0], p[1])), []byte{byte(i)}, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := writeKrew("v0.2.0", dist, &out); err != nil {
		t.Fatal(err)
	}
	var m struct {
		Kind string
		Spec struct {
			Version   string
			Platforms []struct {
				Selector         struct{ MatchLabels map[string]string }
				URI, Sha256, Bin string
			}
		}
	}
	if err := yaml.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if m.Kind != "Plugin" || m.Spec.Version != "v0.2.0" || len(m.Spec.Platforms) != 4 {
		t.Fatalf("manifest:\n%s", out.String())
	}
	// sha256 of the one byte 0x00, the linux/amd64 archive.
	p := m.Spec.Platforms[0]
	if p.Selector.MatchLabels["os"] != "linux" || p.Selector.MatchLabels["arch"] != "amd64" ||
		p.Sha256 != "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d" ||
		!strings.HasSuffix(p.URI, "/v0.2.0/kubectl-jobset_addons-v0.2.0-linux-amd64.tar.gz") || p.Bin != "kubectl-jobset_addons" {
		t.Errorf("linux/amd64: %+v", p)
	}
	if err := writeKrew("v0.3.0", dist, &out); err == nil {
		t.Error("writeKrew of a version without archives succeeded")
	}
}

// TestRepointChart: release-push to another registry changes the repositories in the packaged
// chart's values.yaml and nothing else, tar headers included.
func TestRepointChart(t *testing.T) {
	values, err := os.ReadFile("../../charts/jobset-addons/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	digests := testDigests()
	pinned, err := pinValues(values, "ghcr.io/jobset-addons", "v0.2.0", digests)
	if err != nil {
		t.Fatal(err)
	}
	files := []struct {
		name string
		body []byte
	}{{"jobset-addons/Chart.yaml", []byte("name: jobset-addons\n")}, {"jobset-addons/values.yaml", pinned}}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	when := time.Unix(1700000000, 0)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: when}); err != nil {
			t.Fatal(err)
		}
		tw.Write(f.body)
	}
	tw.Close()
	zw.Close()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.tgz"), filepath.Join(dir, "out.tgz")
	if err := os.WriteFile(in, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := repointChart(in, out, "127.0.0.1:5000/mirror", "v0.2.0", digests); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	err = eachTarEntry(zr, func(h *tar.Header, r io.Reader) error {
		body, err := io.ReadAll(r)
		got = append(got, h.Name)
		if !h.ModTime.Equal(when) {
			t.Errorf("%s: time %v, want %v", h.Name, h.ModTime, when)
		}
		if h.Name == "jobset-addons/values.yaml" {
			want := strings.ReplaceAll(string(pinned), "ghcr.io/jobset-addons/", "127.0.0.1:5000/mirror/")
			if string(body) != want || int64(len(body)) != h.Size {
				t.Errorf("values.yaml re-pointed wrong:\n%s", body)
			}
		}
		return err
	})
	if err != nil || strings.Join(got, ",") != "jobset-addons/Chart.yaml,jobset-addons/values.yaml" {
		t.Errorf("entries %v, err %v", got, err)
	}
	// To the registry the chart was made for: the very archive.
	if err := repointChart(in, out, "ghcr.io/jobset-addons", "v0.2.0", digests); err != nil {
		t.Fatal(err)
	}
	if same, _ := os.ReadFile(out); !bytes.Equal(same, buf.Bytes()) {
		t.Error("re-pointing at the chart's own registry changed the archive")
	}
}
