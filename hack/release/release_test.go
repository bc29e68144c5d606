package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"sigs.k8s.io/yaml"
)

// chartValues is the chart's own values.yaml, which make release pins.
const chartValues = "../../charts/jobset-addons/values.yaml"

func testDigests() map[string]string {
	d := map[string]string{}
	for i, a := range images {
		d[a] = "sha256:" + strings.Repeat(string(rune('a'+i)), 64)
	}
	return d
}

// TestPinValues pins the chart's own values.yaml and reads it back as helm would.
func TestPinValues(t *testing.T) {
	values := mustRead(t, chartValues)
	digests := testDigests()
	pinned, err := pinValues(values, "127.0.0.1:5000/jsa", "v0.2.0", digests)
	if err != nil {
		t.Fatal(err)
	}
	var all map[string]any
	if err := yaml.Unmarshal(pinned, &all); err != nil {
		t.Fatal(err)
	}
	for _, a := range images {
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
	values := mustRead(t, chartValues)
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
	values := mustRead(t, chartValues)
	digests := testDigests()
	pinned, err := pinValues(values, "ghcr.io/jobset-addons", "v0.2.0", digests)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.tgz"), filepath.Join(dir, "out.tgz")
	when := time.Unix(1700000000, 0)
	writeChart(t, in, pinned, when)
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
	if same, _ := os.ReadFile(out); !bytes.Equal(same, mustRead(t, in)) {
		t.Error("re-pointing at the chart's own registry changed the archive")
	}
}

// writeChart writes a packaged chart holding a Chart.yaml and values, its files dated when.
func writeChart(t *testing.T, file string, values []byte, when time.Time) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range []struct {
		name string
		body []byte
	}{{"jobset-addons/Chart.yaml", []byte("name: jobset-addons\n")}, {"jobset-addons/values.yaml", values}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: when}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestPushAndCheckRender: a dist/ of five two-platform indexes (the add-ons' and the barrier's) with their SBOMs (the base image
// standing in for ko's builds), pushed to an in-memory registry, passes checkRender with the
// digests of dist/; a render with another digest, or pointing at a registry that does not hold
// them, fails it.
func TestPushAndCheckRender(t *testing.T) {
	dir := t.TempDir()
	var specs []string
	for _, a := range images {
		base, err := baseIndex()
		if err != nil {
			t.Fatal(err)
		}
		ko, sboms := filepath.Join(dir, "ko", a), filepath.Join(dir, "ko", a+"-sbom")
		p, err := layout.Write(ko, empty.Index)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.AppendIndex(mutate.Annotations(base, map[string]string{"test": a}).(v1.ImageIndex)); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(sboms, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"index", "linux-amd64", "linux-arm64"} {
			if err := os.WriteFile(filepath.Join(sboms, a+"-"+f+".spdx.json"), []byte(`{"name":"`+a+`"}`), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		specs = append(specs, a+"="+ko+","+sboms)
	}
	dist := filepath.Join(dir, "dist")
	var lines bytes.Buffer
	if err := writeImages(filepath.Join(dist, "images"), "v0.2.0", specs, &lines); err != nil {
		t.Fatal(err)
	}
	digestsFile := filepath.Join(dist, "images.digests")
	if err := os.WriteFile(digestsFile, lines.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(lines.String(), "\n"); n != 20 {
		t.Errorf("%d manifests in dist/images, want 20 (5 indexes, 15 SBOMs):\n%s", n, lines.String())
	}
	digests, err := readDigests(digestsFile, "v0.2.0")
	if err != nil {
		t.Fatal(err)
	}
	values, err := pinValues(mustRead(t, chartValues), "ghcr.io/jobset-addons", "v0.2.0", digests)
	if err != nil {
		t.Fatal(err)
	}
	writeChart(t, filepath.Join(dist, "jobset-addons-0.2.0.tgz"), values, time.Unix(0, 0))

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	reg := strings.TrimPrefix(srv.URL, "http://") + "/jsa"
	if err := push(dist, "v0.2.0", reg, filepath.Join(dir, "chart.tgz")); err != nil {
		t.Fatal(err)
	}
	render := func(registry string, digests map[string]string) string {
		var b strings.Builder
		for _, a := range addons {
			fmt.Fprintf(&b, "---\nkind: Deployment\nmetadata:\n  labels:\n    app.kubernetes.io/component: %s\nspec:\n  template:\n    spec:\n      containers:\n      - image: %s/%s:v0.2.0@%s\n", a, registry, a, digests[a])
			if a == "sequencer" {
				fmt.Fprintf(&b, "        args:\n        - --barrier-image=%s/barrier:v0.2.0@%s\n", registry, digests[barrier])
			}
		}
		file := filepath.Join(dir, fmt.Sprintf("render-%d.yaml", len(digests)+len(registry)))
		if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	if err := checkRender(render(reg, digests), reg, "v0.2.0", digestsFile); err != nil {
		t.Errorf("the pushed release fails the check: %v", err)
	}
	tampered := map[string]string{}
	for k, v := range digests {
		tampered[k] = v
	}
	tampered["sequencer"] = "sha256:" + strings.Repeat("0", 64)
	if err := checkRender(render(reg, tampered), reg, "v0.2.0", digestsFile); err == nil || !strings.Contains(err.Error(), "sequencer: the render runs") {
		t.Errorf("a render with another digest: err = %v, want sequencer named", err)
	}
	tampered = map[string]string{barrier: "sha256:" + strings.Repeat("1", 64)}
	for k, v := range digests {
		if k != barrier {
			tampered[k] = v
		}
	}
	if err := checkRender(render(reg, tampered), reg, "v0.2.0", digestsFile); err == nil || !strings.Contains(err.Error(), "barrier: the render runs") {
		t.Errorf("a render with another barrier digest: err = %v, want barrier named", err)
	}
	other := strings.TrimPrefix(srv.URL, "http://") + "/elsewhere"
	if err := checkRender(render(other, digests), other, "v0.2.0", digestsFile); err == nil || !strings.Contains(err.Error(), "does not resolve") {
		t.Errorf("images the registry does not hold: err = %v, want them not resolving", err)
	}
}
