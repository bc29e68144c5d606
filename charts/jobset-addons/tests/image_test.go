package main

import (
	"strings"
	"testing"
)

func TestImageRE(t *testing.T) {
	digest := "@sha256:" + strings.Repeat("0a", 32)
	for image, want := range map[string]bool{
		"ghcr.io/jobset-addons/volumeclaims:0.1.0":                 true,
		"ghcr.io/jobset-addons/volumeclaims:v0.2.0" + digest:       true,
		"127.0.0.1:5000/jsa/podgroups:v0.2.0-rc.1" + digest:        true,
		"kind.local/sequencer:e2e":                                 true,
		"ghcr.io/jobset-addons/volumeclaims":                       false, // no tag
		"ghcr.io/jobset-addons/volumeclaims:":                      false,
		"ghcr.io/jobset-addons/volumeclaims" + digest:              false, // a digest without a tag
		"ghcr.io/jobset-addons/volumeclaims:v0.2.0@sha256:abc":     false,
		"ghcr.io/jobset-addons/volumeclaims:v0.2.0@sha256:" + "ZZ": false,
	} {
		if got := imageRE.MatchString(image); got != want {
			t.Errorf("imageRE.MatchString(%q) = %v, want %v", image, got, want)
		}
	}
}
