package repo_test

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jobset-addons/jobset-addons/e2e/repo"
)

// notKnobs are environment variables the code reads that change nothing of what it does.
var notKnobs = []string{"PATH"}

// TestKnobsTable: every environment variable the Go code of the repository reads (os.Getenv,
// os.LookupEnv) is a row of the knobs table of e2e/README.md, and its name is written out in the
// code: as a string, a constant, the argument of a helper that hands it to os.Getenv, or a value
// of a map of strings; a name built at run time fails. And every row of the table names a
// variable something reads: the Go code, the Makefile or a script of hack/.
func TestKnobsTable(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	reads, problems := envReads(t, root)
	for _, p := range problems {
		t.Error(p)
	}
	table := knobsTable(t, filepath.Join(root, "e2e", "README.md"))
	for name, where := range reads {
		if !table[name] && !slices.Contains(notKnobs, name) {
			t.Errorf("%s reads $%s: add it to the knobs table of e2e/README.md (name, default, what it does)", where, name)
		}
	}
	others := makeAndScripts(t, root)
	for name := range table {
		if _, ok := reads[name]; !ok && !regexp.MustCompile(`\b`+name+`\b`).MatchString(others) {
			t.Errorf("e2e/README.md's knobs table lists %s, which no Go code, Makefile or hack/ script reads", name)
		}
	}
}

// envReads parses every Go file of the repository but tools/ (wrapper modules of upstream
// tools) and returns the environment variables read, each with one place that reads it, and
// the reads whose variable it cannot name.
func envReads(t *testing.T, root string) (map[string]string, []string) {
	t.Helper()
	fset := token.NewFileSet()
	pkgs := map[string][]*ast.File{} // by directory
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || rel == "tools" || rel == "bin" || rel == "dist" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		pkgs[filepath.Dir(rel)] = append(pkgs[filepath.Dir(rel)], f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	consts := packageConsts(pkgs)
	reads := map[string]string{}
	var problems []string
	for dir, files := range pkgs {
		s := &scope{fset: fset, dir: dir, files: files, consts: consts}
		for _, f := range files {
			var fn *ast.FuncDecl // the function declaration being walked, nil outside one
			ast.Inspect(f, func(n ast.Node) bool {
				if d, ok := n.(*ast.FuncDecl); ok {
					fn = d
					return true
				}
				call, ok := n.(*ast.CallExpr)
				if !ok || !isEnvRead(call) || len(call.Args) == 0 {
					return true
				}
				where := fset.Position(call.Pos()).String()
				where = strings.TrimPrefix(where, root+string(filepath.Separator))
				names, err := s.names(fn, call.Args[0], 0)
				if err != nil {
					problems = append(problems, fmt.Sprintf("%s: %v: write the variable's name out", where, err))
				}
				for _, name := range names {
					if _, seen := reads[name]; !seen {
						reads[name] = where
					}
				}
				return true
			})
		}
	}
	return reads, problems
}

// isEnvRead tells a call of os.Getenv or os.LookupEnv.
func isEnvRead(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "os" && (sel.Sel.Name == "Getenv" || sel.Sel.Name == "LookupEnv")
}

// packageConsts are the string constants declared at package level, by "package.Name".
func packageConsts(pkgs map[string][]*ast.File) map[string]string {
	consts := map[string]string{}
	for _, files := range pkgs {
		for _, f := range files {
			for _, decl := range f.Decls {
				gen, ok := decl.(*ast.GenDecl)
				if !ok || gen.Tok != token.CONST {
					continue
				}
				for _, spec := range gen.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if i < len(vs.Values) {
							if v, ok := stringLit(vs.Values[i]); ok {
								consts[f.Name.Name+"."+name.Name] = v
							}
						}
					}
				}
			}
		}
	}
	return consts
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	v, err := strconv.Unquote(lit.Value)
	return v, err == nil
}

// scope resolves the argument of an environment read within the files of one directory.
type scope struct {
	fset   *token.FileSet
	dir    string
	files  []*ast.File
	consts map[string]string
}

// names are the variable names e, an expression in fn, can be: a string, a constant, a value of
// a package-level map of strings indexed, or a parameter of fn, whose arguments at every call
// of fn in the directory are resolved in turn.
func (s *scope) names(fn *ast.FuncDecl, e ast.Expr, depth int) ([]string, error) {
	if depth > 3 {
		return nil, fmt.Errorf("a helper of a helper of a helper")
	}
	if v, ok := stringLit(e); ok {
		return []string{v}, nil
	}
	switch e := e.(type) {
	case *ast.SelectorExpr: // pkg.Const
		if pkg, ok := e.X.(*ast.Ident); ok {
			if v, ok := s.consts[pkg.Name+"."+e.Sel.Name]; ok {
				return []string{v}, nil
			}
		}
	case *ast.IndexExpr: // knobs[key]
		if m, ok := e.X.(*ast.Ident); ok {
			if vs := s.mapValues(m.Name); len(vs) > 0 {
				return vs, nil
			}
		}
	case *ast.Ident:
		for _, f := range s.files {
			if v, ok := s.consts[f.Name.Name+"."+e.Name]; ok {
				return []string{v}, nil
			}
		}
		if i := paramIndex(fn, e.Name); i >= 0 {
			return s.callArgs(fn.Name.Name, i, depth)
		}
	}
	return nil, fmt.Errorf("the variable read is %s, a name made at run time", types.ExprString(e))
}

// paramIndex is the position of the parameter name of fn, -1 if it is none.
func paramIndex(fn *ast.FuncDecl, name string) int {
	if fn == nil {
		return -1
	}
	i := 0
	for _, field := range fn.Type.Params.List {
		for _, n := range field.Names {
			if n.Name == name {
				return i
			}
			i++
		}
	}
	return -1
}

// callArgs resolves the argument at position i of every call of the function named fnName in
// the directory.
func (s *scope) callArgs(fnName string, i, depth int) ([]string, error) {
	var names []string
	var err error
	for _, f := range s.files {
		var caller *ast.FuncDecl
		ast.Inspect(f, func(n ast.Node) bool {
			if d, ok := n.(*ast.FuncDecl); ok {
				caller = d
			}
			call, ok := n.(*ast.CallExpr)
			if !ok || err != nil {
				return err == nil
			}
			if id, ok := call.Fun.(*ast.Ident); ok && id.Name == fnName && i < len(call.Args) {
				var ns []string
				ns, err = s.names(caller, call.Args[i], depth+1)
				if err != nil {
					err = fmt.Errorf("%s: %w", s.fset.Position(call.Pos()), err)
				}
				names = append(names, ns...)
			}
			return true
		})
	}
	if err == nil && len(names) == 0 {
		err = fmt.Errorf("%s hands its parameter to os.Getenv and is never called with a name", fnName)
	}
	return names, err
}

// mapValues are the values of the package-level map literal name, all strings, or nil.
func (s *scope) mapValues(name string) []string {
	for _, f := range s.files {
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.VAR {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if n.Name != name || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.CompositeLit)
					if !ok {
						return nil
					}
					var values []string
					for _, elt := range lit.Elts {
						kv, ok := elt.(*ast.KeyValueExpr)
						if !ok {
							return nil
						}
						v, ok := stringLit(kv.Value)
						if !ok {
							return nil
						}
						values = append(values, v)
					}
					return values
				}
			}
		}
	}
	return nil
}

// knobsTable is the set of names in the first column of the table under the heading "Knobs"
// of the page: each `NAME` in it.
func knobsTable(t *testing.T, page string) map[string]bool {
	t.Helper()
	f, err := os.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names := map[string]bool{}
	in := false
	code := regexp.MustCompile("`([A-Z][A-Z0-9_]*)`")
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			in = strings.TrimLeft(line, "# ") == "Knobs"
			continue
		}
		if !in || !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			names[m[1]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatalf("%s: no table under a heading Knobs", page)
	}
	return names
}

// makeAndScripts is the text of the Makefile, make/*.mk and the scripts of hack/ and .ci/.
func makeAndScripts(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	files := []string{filepath.Join(root, "Makefile")}
	for _, glob := range []string{"make/*.mk", "hack/*.sh", "hack/*/*.sh", ".ci/*"} {
		m, err := filepath.Glob(filepath.Join(root, glob))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		b.WriteByte('\n')
	}
	return b.String()
}
