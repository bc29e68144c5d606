// Command release is the Go half of make release, make release-push and make release-check
// (hack/release.sh, hack/release-check.sh drive it):
//
//	release base KOCACHE                      ko's base image, written where ko looks (KOCACHE/img); prints its reference
//	release images OUT VERSION NAME=KOLAYOUT,SBOMDIR...   one OCI layout OUT of every add-on's index and its SBOMs; prints the digests
//	release compare DIGESTS DIGESTS           fails unless two runs' digests are the same
//	release pin-values VALUES REGISTRY VERSION DIGESTS   pins each add-on's image in a chart's values.yaml
//	release krew VERSION DIST                 the krew plugin manifest of the plugin archives in DIST
//	release push DIST VERSION REGISTRY CHART_OUT   pushes the images and SBOMs; writes the chart re-pointed at REGISTRY
//	release registry ADDR_FILE LISTEN         a registry on LISTEN (127.0.0.1:0; 0.0.0.0:0 for a kind node to reach), go-containerregistry's, in memory, until killed; its address goes to ADDR_FILE
//	release check-render RENDER REGISTRY VERSION DIGESTS   every add-on's image in a helm render is pinned and resolves
//	release extract-app LAYOUT NAME VERSION PLATFORM OUT   the add-on's binary out of its image, to run it
package main

import (
	"errors"
	"fmt"
	"os"
)

// addons are the controllers a release holds, in the order it builds and lists them.
var addons = []string{"volumeclaims", "resourceclaims", "sequencer", "podgroups"}

// barrier is the image of the sequencer's start barrier (controllers/sequencer/barrier), which
// the sequencer is given as --barrier-image (chart value barrier.image).
const barrier = "barrier"

// images are every image a release holds: the controllers' and the barrier's.
var images = append(addons[:len(addons):len(addons)], barrier)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

// commands are the subcommands: how many arguments each takes (-1: at least 3) and what it does.
var commands = map[string]struct {
	args int
	run  func(a []string) error
}{
	"base": {1, func(a []string) error {
		ref, err := writeBase(a[0])
		if err == nil {
			fmt.Println(ref)
		}
		return err
	}},
	"images":       {-1, func(a []string) error { return writeImages(a[0], a[1], a[2:], os.Stdout) }},
	"compare":      {2, func(a []string) error { return compareFiles(a[0], a[1]) }},
	"pin-values":   {4, func(a []string) error { return pinValuesFile(a[0], a[1], a[2], a[3]) }},
	"krew":         {2, func(a []string) error { return writeKrew(a[0], a[1], os.Stdout) }},
	"push":         {4, func(a []string) error { return push(a[0], a[1], a[2], a[3]) }},
	"registry":     {2, func(a []string) error { return serveRegistry(a[0], a[1]) }},
	"check-render": {4, func(a []string) error { return checkRender(a[0], a[1], a[2], a[3]) }},
	"extract-app":  {5, func(a []string) error { return extractApp(a[0], a[1], a[2], a[3], a[4]) }},
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: release base|images|compare|pin-values|krew|push|registry|check-render|extract-app ARGS (see the package comment)")
	}
	c, ok := commands[args[0]]
	if !ok {
		return fmt.Errorf("unknown command %q", args[0])
	}
	if n := len(args) - 1; (c.args >= 0 && n != c.args) || (c.args < 0 && n < 3) {
		return fmt.Errorf("%s: wrong number of arguments (%d); see the package comment", args[0], n)
	}
	return c.run(args[1:])
}
