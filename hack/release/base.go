package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// baseName is the name the add-ons' base image goes by. Nothing is ever pulled from it: ko
// (v0.18.0, pkg/commands/cache.go) looks a base named by digest up in the OCI layout
// $KOCACHE/img before it asks a registry, and writeBase puts the image there. ko's default base
// (cgr.dev/chainguard/static) cannot be pulled on machines without a registry, and a base made
// here is the same bytes on every machine, which keeps the add-ons' digests reproducible.
const baseName = "jobset-addons.local/base"

// basePlatforms are the platforms of every release image.
var basePlatforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// baseFiles is the base's only layer: what a static Go binary running as nonroot (65532) needs
// and nothing more (no shell, no CA certificates: the add-ons talk only to the API server, whose
// CA comes with the ServiceAccount token).
func baseFiles() ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0).UTC()
	entries := []struct {
		name     string
		mode     int64
		uid      int
		contents string
		dir      bool
	}{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, contents: "root:x:0:\nnonroot:x:65532:\n"},
		{name: "etc/passwd", mode: 0o644, contents: "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, uid: 65532, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
	}
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: epoch, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.contents))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := io.WriteString(tw, e.contents); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// baseIndex is the base image for every platform of basePlatforms.
func baseIndex() (v1.ImageIndex, error) {
	files, err := baseFiles()
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(files)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range basePlatforms {
		img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
		if err != nil {
			return nil, err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture = p.OS, p.Architecture
		cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
		cf.Config.User = "65532:65532"
		cf.Config.WorkingDir = "/home/nonroot"
		cf.Config.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			return nil, err
		}
		p := p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	return idx, nil
}

// writeBase writes the base into kocache/img, the layout ko reads its base cache from, with the
// index and each platform's image listed at the top (ko looks each up by digest there), and
// returns the reference to give ko (KO_DEFAULTBASEIMAGE).
func writeBase(kocache string) (string, error) {
	idx, err := baseIndex()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(kocache, "img")
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return "", err
	}
	if err := p.AppendIndex(idx); err != nil {
		return "", err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return "", err
	}
	for _, m := range im.Manifests {
		img, err := idx.Image(m.Digest)
		if err != nil {
			return "", err
		}
		if err := p.AppendImage(img); err != nil {
			return "", err
		}
	}
	d, err := idx.Digest()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s@%s", baseName, d), nil
}
