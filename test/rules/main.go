// Command rules checks the code rules of docs/ARCHITECTURE.md that the import graph cannot show
// (test/imports.sh checks that one), reading the Go files of a module's tree with go/ast:
//
//   - env: the environment (os.Getenv, os.LookupEnv, os.Environ, os.ExpandEnv, syscall.Getenv,
//     syscall.Environ) is read only under cmd/ (flags and wiring), in the test-support packages and
//     in _test.go files: every other package is told its settings by its caller;
//   - ctxfield: no struct field, named or embedded, is a context.Context outside _test.go files: a
//     context is passed down as an argument, never kept;
//   - protocol: the module's protocol package is imported, outside _test.go files, only by agent
//     (the event loop) and under cmd/.
//
// Usage: rules [DIR] (default "."), DIR the module's root (where go.mod is). It prints every
// finding as "path:line: rule: what", paths relative to DIR, and exits 1 when there is one (2 when
// the tree cannot be read). Files built only with a test-only tag (testOnlyTags) are test code.
package main

import (
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// envAllowed are the directories (relative to the module root, with their subdirectories) whose
// non-test files may read the environment: the CLI and the test-support packages.
var envAllowed = []string{"cmd", "internal/testutil", "internal/vectors", "internal/logbuf", "internal/s3test", "internal/chaos", "test"}

// envReads are the functions that read the environment, by import path.
var envReads = map[string][]string{
	"os":      {"Getenv", "LookupEnv", "Environ", "ExpandEnv"},
	"syscall": {"Getenv", "Environ"},
}

// testOnlyTags are build tags only test builds set: a file that needs one is test code.
var testOnlyTags = map[string]bool{"xetcrash": true}

// finding is one broken rule at a place.
type finding struct {
	pos  token.Position
	rule string
	what string
}

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	found, err := check(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rules:", err)
		os.Exit(2)
	}
	for _, f := range found {
		fmt.Printf("%s:%d: %s: %s\n", f.pos.Filename, f.pos.Line, f.rule, f.what)
	}
	if len(found) > 0 {
		fmt.Printf("rules: %d findings\n", len(found))
		os.Exit(1)
	}
	fmt.Println("rules: ok")
}

// check reads every Go file under root, the module's root, and returns the findings in file and
// line order.
func check(root string) ([]finding, error) {
	mod, err := modulePath(root)
	if err != nil {
		return nil, err
	}
	var found []finding
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (n == "testdata" || n == "vendor" || n == "node_modules" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if testOnly(f) {
			return nil
		}
		found = append(found, checkFile(fset, f, filepath.ToSlash(rel), mod)...)
		return nil
	})
	for i := range found {
		if rel, err := filepath.Rel(root, found[i].pos.Filename); err == nil {
			found[i].pos.Filename = filepath.ToSlash(rel)
		}
	}
	sort.SliceStable(found, func(i, j int) bool {
		a, b := found[i].pos, found[j].pos
		return a.Filename < b.Filename || a.Filename == b.Filename && a.Line < b.Line
	})
	return found, err
}

var moduleLine = regexp.MustCompile(`(?m)^module\s+(\S+)`)

// modulePath reads the module path from root/go.mod.
func modulePath(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	m := moduleLine.FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("%s: no module line", filepath.Join(root, "go.mod"))
	}
	return strings.Trim(string(m[1]), `"`), nil
}

// checkFile applies every rule to one non-test file at rel (slash-separated, from the root).
func checkFile(fset *token.FileSet, f *ast.File, rel, mod string) []finding {
	imports := map[string]string{} // local name → import path
	var found []finding
	for _, is := range f.Imports {
		path, _ := strconv.Unquote(is.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		if is.Name != nil {
			name = is.Name.Name
		}
		imports[name] = path
		if path == mod+"/protocol" && !protocolAllowed(filepath.ToSlash(filepath.Dir(rel))) {
			found = append(found, finding{fset.Position(is.Pos()), "protocol", "imports " + path + " (only agent and cmd/... may)"})
		}
	}
	envOK := under(rel, envAllowed)
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if fn, ok := pkgSelector(n, imports); ok && !envOK && isEnvRead(fn) {
				found = append(found, finding{fset.Position(n.Pos()), "env", fn + " outside cmd/ and the test-support packages (take the setting from the caller)"})
			}
		case *ast.StructType:
			for _, fld := range n.Fields.List {
				if isContext(fld.Type, imports) {
					found = append(found, finding{fset.Position(fld.Pos()), "ctxfield", "a struct field of type context.Context (pass it as an argument)"})
				}
			}
		}
		return true
	})
	return found
}

// pkgSelector returns "importpath.Name" when sel is a package-qualified identifier.
func pkgSelector(sel *ast.SelectorExpr, imports map[string]string) (string, bool) {
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", false
	}
	path, ok := imports[id.Name]
	if !ok {
		return "", false
	}
	return path + "." + sel.Sel.Name, true
}

func isEnvRead(fn string) bool {
	pkg, name, _ := strings.Cut(fn, ".")
	for _, n := range envReads[pkg] {
		if n == name {
			return true
		}
	}
	return false
}

// isContext reports whether t is context.Context (or a pointer to it).
func isContext(t ast.Expr, imports map[string]string) bool {
	if st, ok := t.(*ast.StarExpr); ok {
		t = st.X
	}
	sel, ok := t.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	fn, ok := pkgSelector(sel, imports)
	return ok && fn == "context.Context"
}

// protocolAllowed: the packages whose non-test files may import protocol.
func protocolAllowed(dir string) bool {
	return dir == "agent" || under(dir+"/", []string{"cmd"})
}

// under reports whether the slash path rel lies in one of dirs (or their subdirectories).
func under(rel string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(rel, d+"/") {
			return true
		}
	}
	return false
}

// testOnly reports whether f's build constraint needs a test-only tag: whether no setting of the
// other tags it names satisfies it with the test-only tags off.
func testOnly(f *ast.File) bool {
	expr := buildConstraint(f)
	if expr == nil {
		return false
	}
	var tags []string
	seen := map[string]bool{}
	expr.Eval(func(tag string) bool {
		if !seen[tag] && !testOnlyTags[tag] {
			seen[tag] = true
			tags = append(tags, tag)
		}
		return false
	})
	for bits := 0; bits < 1<<len(tags); bits++ {
		on := map[string]bool{}
		for i, t := range tags {
			on[t] = bits&(1<<i) != 0
		}
		if expr.Eval(func(tag string) bool { return on[tag] }) {
			return false
		}
	}
	return true
}

// buildConstraint is f's //go:build expression, nil when it has none.
func buildConstraint(f *ast.File) constraint.Expr {
	for _, cg := range f.Comments {
		if cg.Pos() > f.Package {
			break
		}
		for _, c := range cg.List {
			if constraint.IsGoBuild(c.Text) {
				if expr, err := constraint.Parse(c.Text); err == nil {
					return expr
				}
			}
		}
	}
	return nil
}
