package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// pluginPlatforms are the platforms the kubectl plugin is released for.
var pluginPlatforms = [][2]string{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}}

// pluginArchive is the name of the plugin's archive for one platform, as make release writes it.
func pluginArchive(version, goos, goarch string) string {
	return fmt.Sprintf("kubectl-jobset_addons-%s-%s-%s.tar.gz", version, goos, goarch)
}

// writeKrew writes krew's Plugin manifest for the plugin archives in dist, each with its
// sha256. The archives are downloaded from $RELEASE_URL/<archive> (default: the project's
// GitHub release of version); `kubectl krew install --manifest=... --archive=...` installs
// from the files themselves, offline.
func writeKrew(version, dist string, w io.Writer) error {
	base := os.Getenv("RELEASE_URL")
	if base == "" {
		base = "https://github.com/jobset-addons/jobset-addons/releases/download/" + version
	}
	type selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	}
	type platform struct {
		Selector selector `json:"selector"`
		URI      string   `json:"uri"`
		Sha256   string   `json:"sha256"`
		Bin      string   `json:"bin"`
	}
	var platforms []platform
	for _, p := range pluginPlatforms {
		file := pluginArchive(version, p[0], p[1])
		data, err := os.ReadFile(filepath.Join(dist, file))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		platforms = append(platforms, platform{
			Selector: selector{MatchLabels: map[string]string{"os": p[0], "arch": p[1]}},
			URI:      strings.TrimSuffix(base, "/") + "/" + file, Sha256: hex.EncodeToString(sum[:]), Bin: "kubectl-jobset_addons",
		})
	}
	manifest := map[string]any{
		"apiVersion": "krew.googlecontainertools.github.com/v1alpha2",
		"kind":       "Plugin",
		"metadata":   map[string]any{"name": "jobset-addons"},
		"spec": map[string]any{
			"version":          version,
			"homepage":         "https://github.com/jobset-addons/jobset-addons",
			"shortDescription": "Show what the jobset-addons controllers did to a JobSet; lint and explain their annotations",
			"description": "status prints what the jobset-addons controllers (volumeclaims, resourceclaims,\n" +
				"sequencer, podgroups) did to one JobSet: its PVCs, ResourceClaims, stages and gated\n" +
				"pods, PodGroups and last Events, found through the add-ons' labels and annotations;\n" +
				"it needs only read access. lint checks manifests offline as the add-ons' webhooks\n" +
				"would; explain prints what each annotation holds.\n",
			"platforms": platforms,
		},
	}
	out, err := yaml.Marshal(manifest)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}
