package repo_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jobset-addons/jobset-addons/e2e/repo"
)

// Most lines a non-test Go file of controllers/ or pkg/ has, and a function of one.
const (
	maxFileLines = 400
	maxFuncLines = 60
)

// sizeExceptions are the files and functions (path, or path:func) past those limits, each until
// it is split. An entry that is within the limits again fails the test: remove it.
var sizeExceptions = []string{
	"pkg/contract/parse.go:decode",
	"pkg/contract/jsonfields.go:structFields",
	"pkg/contract/stages.go:buildGraph",
}

// TestCodeSize: no non-test Go file of controllers/ or pkg/ is over maxFileLines lines and no
// function over maxFuncLines (its doc comment aside), but a main package's main (the binary's
// flag block) and the generator of docs/reference.md (pkg/contract/internal/docgen), and
// sizeExceptions.
func TestCodeSize(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	over := map[string]string{}
	for _, dir := range []string{"controllers", "pkg"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			if strings.HasPrefix(rel, "pkg/contract/internal/docgen/") {
				return nil
			}
			for k, v := range sizeOf(t, path, rel) {
				over[k] = v
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range over {
		if !slices.Contains(sizeExceptions, k) {
			t.Errorf("%s: %s: split it by concern", k, v)
		}
	}
	for _, k := range sizeExceptions {
		if _, ok := over[k]; !ok {
			t.Errorf("%s is within the limits: remove it from sizeExceptions", k)
		}
	}
}

// sizeOf is, for the file at path (rel from the root), what is over the limits: the file
// (key rel) and each function (key rel:name), with its length.
func sizeOf(t *testing.T, path, rel string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	over := map[string]string{}
	if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
		over[rel] = fmt.Sprintf("%d lines, more than %d", n, maxFileLines)
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || (f.Name.Name == "main" && fd.Name.Name == "main" && fd.Recv == nil) {
			continue
		}
		if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
			over[rel+":"+fd.Name.Name] = fmt.Sprintf("func %s has %d lines, more than %d", fd.Name.Name, n, maxFuncLines)
		}
	}
	return over
}
