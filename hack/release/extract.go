package main

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// extractApp writes the add-on's binary (/ko-app/NAME, where ko puts it) of the image for
// platform (linux/amd64) of NAME:VERSION in the OCI layout dir to out, so that the release can
// run it and ask its --version.
func extractApp(dir, name, version, platform, out string) error {
	img, err := platformImage(dir, name+":"+version, platform)
	if err != nil {
		return err
	}
	fs := mutate.Extract(img)
	defer fs.Close()
	found := false
	err = eachTarEntry(fs, func(h *tar.Header, r io.Reader) error {
		if filepath.Clean("/"+h.Name) != "/ko-app/"+name {
			return nil
		}
		f, err := os.OpenFile(out, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, r); err != nil {
			f.Close()
			return err
		}
		found = true
		if err := f.Close(); err != nil {
			return err
		}
		return errStop
	})
	if err == nil && !found {
		err = fmt.Errorf("%s (%s) has no /ko-app/%s", img, platform, name)
	}
	return err
}

// platformImage is the image for platform of the index named ref in the OCI layout dir.
func platformImage(dir, ref, platform string) (v1.Image, error) {
	ii, manifests, err := layoutManifests(dir)
	if err != nil {
		return nil, err
	}
	for _, m := range manifests {
		if m.Annotations[refName] != ref {
			continue
		}
		idx, err := ii.ImageIndex(m.Digest)
		if err != nil {
			return nil, err
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, err
		}
		for _, pm := range im.Manifests {
			if pm.Platform != nil && pm.Platform.OS+"/"+pm.Platform.Architecture == platform {
				return idx.Image(pm.Digest)
			}
		}
		return nil, fmt.Errorf("%s has no %s image", ref, platform)
	}
	return nil, fmt.Errorf("%s holds no %s", dir, ref)
}
