package main

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"sigs.k8s.io/yaml"
)

var keychain = remote.WithAuthFromKeychain(authn.DefaultKeychain)

// push pushes every manifest of dist/images (the add-ons' indexes and their SBOMs, under the
// tags they carry there) to registry/<add-on>, and writes to chartOut the packaged chart of
// dist with its images re-pointed at registry (the very archive when make release was given
// that registry already). A registry on localhost or 127.0.0.1 is spoken to over plain HTTP.
func push(dist, version, registryPrefix, chartOut string) error {
	ii, manifests, err := layoutManifests(filepath.Join(dist, "images"))
	if err != nil {
		return err
	}
	for _, m := range manifests {
		ref, err := name.ParseReference(registryPrefix + "/" + m.Annotations[refName])
		if err != nil {
			return err
		}
		if m.MediaType.IsIndex() {
			idx, err := ii.ImageIndex(m.Digest)
			if err == nil {
				err = remote.WriteIndex(ref, idx, keychain)
			}
			if err != nil {
				return fmt.Errorf("pushing %s: %w", ref, err)
			}
		} else {
			img, err := ii.Image(m.Digest)
			if err == nil {
				err = remote.Write(ref, img, keychain)
			}
			if err != nil {
				return fmt.Errorf("pushing %s: %w", ref, err)
			}
		}
		fmt.Printf("pushed %s@%s\n", ref, m.Digest)
	}
	digests, err := readDigests(filepath.Join(dist, "images.digests"), version)
	if err != nil {
		return err
	}
	charts, err := filepath.Glob(filepath.Join(dist, "jobset-addons-*.tgz"))
	if err != nil || len(charts) != 1 {
		return fmt.Errorf("want one packaged chart in %s, found %v", dist, charts)
	}
	return repointChart(charts[0], chartOut, registryPrefix, version, digests)
}

// serveRegistry serves an in-memory OCI registry (go-containerregistry's pkg/registry) on
// listen (host:0 for a free port), writes the address it listens on to addrFile, and serves
// until the process is killed.
func serveRegistry(addrFile, listen string) error {
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	if err := os.WriteFile(addrFile+".tmp", []byte(l.Addr().String()), 0o644); err != nil {
		return err
	}
	if err := os.Rename(addrFile+".tmp", addrFile); err != nil {
		return err
	}
	return http.Serve(l, registry.New(registry.Logger(log.New(io.Discard, "", 0))))
}

// checkRender checks a helm render of the chart pulled from registryPrefix: every add-on's
// Deployment runs registryPrefix/<name>:VERSION@<digest of dist>, and that digest resolves
// in the registry to an index for linux/amd64 and linux/arm64 whose SBOMs are there too.
func checkRender(render, registryPrefix, version, digestsFile string) error {
	digests, err := readDigests(digestsFile, version)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(render)
	if err != nil {
		return err
	}
	running := map[string]string{} // image by add-on, and the barrier's
	for _, part := range bytes.Split(data, []byte("\n---")) {
		var d struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Image string   `json:"image"`
							Args  []string `json:"args"`
						} `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(part, &d); err != nil {
			return err
		}
		if d.Kind == "Deployment" && len(d.Spec.Template.Spec.Containers) > 0 {
			c := d.Spec.Template.Spec.Containers[0]
			running[d.Metadata.Labels["app.kubernetes.io/component"]] = c.Image
			for _, arg := range c.Args {
				if image, ok := strings.CutPrefix(arg, "--barrier-image="); ok {
					running[barrier] = image
				}
			}
		}
	}
	var problems []string
	for _, a := range images {
		want := fmt.Sprintf("%s/%s:%s@%s", registryPrefix, a, version, digests[a])
		if running[a] != want {
			problems = append(problems, fmt.Sprintf("%s: the render runs %q, want %q", a, running[a], want))
			continue
		}
		if err := resolves(want, registryPrefix+"/"+a); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", a, err))
			continue
		}
		fmt.Printf("%s: %s resolves (linux/amd64, linux/arm64, SBOMs)\n", a, want)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s:\n  %s", render, strings.Join(problems, "\n  "))
	}
	return nil
}

// resolves checks that image (pinned by digest) is an index in the registry, for every release
// platform, and that the index and each platform's image have their SBOM beside them in repo.
func resolves(image, repo string) error {
	ref, err := name.ParseReference(image)
	if err != nil {
		return err
	}
	idx, err := remote.Index(ref, keychain)
	if err != nil {
		return fmt.Errorf("%s does not resolve: %w", image, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	need := []v1.Hash{d}
	var got []string
	for _, m := range im.Manifests {
		need = append(need, m.Digest)
		got = append(got, m.Platform.OS+"/"+m.Platform.Architecture)
	}
	if strings.Join(got, ",") != "linux/amd64,linux/arm64" {
		return fmt.Errorf("%s holds platforms %v, want linux/amd64 and linux/arm64", image, got)
	}
	for _, h := range need {
		tag, err := name.ParseReference(repo + ":" + sbomTag(h))
		if err != nil {
			return err
		}
		if _, err := remote.Head(tag, keychain); err != nil {
			return fmt.Errorf("no SBOM of %s: %w", h, err)
		}
	}
	return nil
}
