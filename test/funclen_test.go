package test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a non-test function may be, unless its doc comment says why with a
// line starting "Long:".
const maxFuncLines = 80

// Functions read as pipelines of named stages: none outside tests is over maxFuncLines lines.
func TestNoLongFunctions(t *testing.T) {
	fset := token.NewFileSet()
	root := ".."
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if lines > maxFuncLines && (fn.Doc == nil || !strings.Contains(fn.Doc.Text(), "Long:")) {
				t.Errorf("%s: %s is %d lines (at most %d, or say why in a \"Long:\" line of its doc comment)",
					fset.Position(fn.Pos()), fn.Name.Name, lines, maxFuncLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
