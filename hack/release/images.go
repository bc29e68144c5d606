package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// refName is the OCI layout annotation that names each manifest: <add-on>:<tag>.
const refName = "org.opencontainers.image.ref.name"

// spdxType is the media type of the SBOM layer, as ko (through cosign) attaches it.
const spdxType types.MediaType = "text/spdx+json"

// sbomTag is the tag an SBOM of the manifest d is stored under, as ko and cosign store it when
// they publish to a registry: sha256-<hex>.sbom.
func sbomTag(d v1.Hash) string { return d.Algorithm + "-" + d.Hex + ".sbom" }

// writeImages collects what ko wrote for every add-on (specs: NAME=KOLAYOUT,SBOMDIR, ko's
// --oci-layout-path and --sbom-dir) into one OCI layout out: each add-on's index, named
// NAME:VERSION, and an SBOM for the index and for each platform's image, named
// NAME:sha256-<hex>.sbom. It prints every manifest of out, "NAME:TAG DIGEST" a line: what a
// second build must reproduce.
func writeImages(out, version string, specs []string, w io.Writer) error {
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	p, err := layout.Write(out, empty.Index)
	if err != nil {
		return err
	}
	for _, spec := range specs {
		name, dirs, ok := strings.Cut(spec, "=")
		koLayout, sbomDir, ok2 := strings.Cut(dirs, ",")
		if !ok || !ok2 {
			return fmt.Errorf("%q is not NAME=KOLAYOUT,SBOMDIR", spec)
		}
		idx, err := onlyIndex(koLayout)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{refName: name + ":" + version})); err != nil {
			return err
		}
		sboms, err := sbomsOf(name, idx, sbomDir)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		for _, s := range sboms {
			if err := p.AppendImage(s.img, layout.WithAnnotations(map[string]string{refName: name + ":" + sbomTag(s.of)})); err != nil {
				return err
			}
		}
	}
	lines, err := manifestLines(out)
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, lines)
	return err
}

// onlyIndex is the one image index of the layout ko wrote.
func onlyIndex(dir string) (v1.ImageIndex, error) {
	ii, manifests, err := layoutManifests(dir)
	if err != nil {
		return nil, err
	}
	if len(manifests) != 1 || !manifests[0].MediaType.IsIndex() {
		return nil, fmt.Errorf("%s: want exactly one image index (a multi-platform ko build), found %d manifests", dir, len(manifests))
	}
	return ii.ImageIndex(manifests[0].Digest)
}

// layoutManifests opens the OCI layout dir and lists its top-level manifests.
func layoutManifests(dir string) (v1.ImageIndex, []v1.Descriptor, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, nil, err
	}
	ii, err := p.ImageIndex()
	if err != nil {
		return nil, nil, err
	}
	im, err := ii.IndexManifest()
	if err != nil {
		return nil, nil, err
	}
	return ii, im.Manifests, nil
}

type sbom struct {
	of  v1.Hash
	img v1.Image
}

// sbomsOf wraps the SPDX documents ko wrote into sbomDir (NAME-index.spdx.json,
// NAME-<os>-<arch>.spdx.json) as single-layer images, one per manifest of idx; each must be there.
func sbomsOf(name string, idx v1.ImageIndex, sbomDir string) ([]sbom, error) {
	d, err := idx.Digest()
	if err != nil {
		return nil, err
	}
	files := map[v1.Hash]string{d: name + "-index.spdx.json"}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	order := []v1.Hash{d}
	for _, m := range im.Manifests {
		if m.Platform == nil {
			return nil, fmt.Errorf("manifest %s has no platform", m.Digest)
		}
		files[m.Digest] = fmt.Sprintf("%s-%s-%s.spdx.json", name, m.Platform.OS, m.Platform.Architecture)
		order = append(order, m.Digest)
	}
	var out []sbom
	for _, h := range order {
		data, err := os.ReadFile(filepath.Join(sbomDir, files[h]))
		if err != nil {
			return nil, fmt.Errorf("the SBOM of %s: %w", h, err)
		}
		img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), static.NewLayer(data, spdxType))
		if err != nil {
			return nil, err
		}
		out = append(out, sbom{of: h, img: img})
	}
	return out, nil
}

// manifestLines lists the manifests of an OCI layout, "REF DIGEST" a line, sorted.
func manifestLines(dir string) (string, error) {
	_, manifests, err := layoutManifests(dir)
	if err != nil {
		return "", err
	}
	var lines []string
	for _, m := range manifests {
		lines = append(lines, m.Annotations[refName]+" "+m.Digest.String()+"\n")
	}
	sort.Strings(lines)
	return strings.Join(lines, ""), nil
}

// compareFiles fails, naming every difference, unless two runs' lists of digests are the same.
func compareFiles(a, b string) error {
	da, err := os.ReadFile(a)
	if err != nil {
		return err
	}
	db, err := os.ReadFile(b)
	if err != nil {
		return err
	}
	return compareDigests(da, db)
}

func compareDigests(a, b []byte) error {
	if len(bytes.TrimSpace(a)) == 0 {
		return errors.New("no digests to compare")
	}
	if bytes.Equal(a, b) {
		return nil
	}
	// Both lists come out of the same steps in the same order: compare them line by line.
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	var diff []string
	for i := range max(len(la), len(lb)) {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			diff = append(diff, fmt.Sprintf("  first build:  %s\n  second build: %s", x, y))
		}
	}
	return fmt.Errorf("not reproducible: the two builds differ:\n%s", strings.Join(diff, "\n"))
}
