// Package version holds the release a jobset-addons binary was built as. make release sets it
// at link time:
//
//	-ldflags "-X github.com/jobset-addons/jobset-addons/pkg/addon/version.version=v0.2.0"
//
// It is a package of its own, importing nothing, so that the kubectl plugin reports its version
// without linking the controllers' runtime.
package version

var version = "devel"

// String is the release this binary was built as; "devel" when it was built otherwise (go
// build, make build, the tests). Every add-on prints it with --version and logs it when it
// starts; the kubectl plugin prints it with --version.
func String() string { return version }
