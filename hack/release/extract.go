package main

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// extractApp writes the add-on's binary (/ko-app/NAME, where ko puts it) of the image for
// platform (linux/amd64) of NAME:VERSION in the OCI layout dir to out, so that the release can
// run it and ask its --version.
func extractApp(dir, name, version, platform, out string) error {
	ii, manifests, err := layoutManifests(dir)
	if err != nil {
		return err
	}
	for _, m := range manifests {
		if m.Annotations[refName] != name+":"+version {
			continue
		}
		idx, err := ii.ImageIndex(m.Digest)
		if err != nil {
			return err
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return err
		}
		for _, pm := range im.Manifests {
			if pm.Platform == nil || pm.Platform.OS+"/"+pm.Platform.Architecture != platform {
				continue
			}
			img, err := idx.Image(pm.Digest)
			if err != nil {
				return err
			}
			fs := mutate.Extract(img)
			defer fs.Close()
			tr := tar.NewReader(fs)
			for {
				h, err := tr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					return err
				}
				if filepath.Clean("/"+h.Name) == "/ko-app/"+name {
					f, err := os.OpenFile(out, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
					if err != nil {
						return err
					}
					if _, err := io.Copy(f, tr); err != nil {
						f.Close()
						return err
					}
					return f.Close()
				}
			}
			return fmt.Errorf("%s:%s (%s) has no /ko-app/%s", name, version, platform, name)
		}
		return fmt.Errorf("%s:%s has no %s image", name, version, platform)
	}
	return fmt.Errorf("%s holds no %s:%s", dir, name, version)
}
