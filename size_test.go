package crl_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every function of the root module's library code (test files, examples/
// and internal/testsupport/ aside; other modules are theirs) is at most 60
// lines long and has a cyclomatic complexity of at most 15, counted as
// gocyclo counts it: 1, plus one per if, for, range, non-default case or
// select case, && and ||.
func TestLibraryFunctionsAreSmall(t *testing.T) {
	checked := 0
	err := filepath.WalkDir(".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return skipDir(name)
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			checked++
			lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			assert.LessOrEqual(t, lines, 60, "%s: %s is %d lines long", name, fn.Name.Name, lines)
			c := complexity(fn)
			assert.LessOrEqual(t, c, 15, "%s: %s has a cyclomatic complexity of %d", name, fn.Name.Name, c)
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, checked, 500, "the walk found the library's functions")
}

// The adapters stay thin: the statement loop, the replay and the
// connection loop are the driver layer's, so an adapter holds only what
// its library needs of them. Their library code (test files and
// testdata aside) is counted in lines.
func TestAdaptersAreThin(t *testing.T) {
	for dir, limit := range map[string]int{"gormcrl": 1500, "sqlxcrl": 900} {
		lines := 0
		err := filepath.WalkDir(dir, func(name string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				if err == nil && name != dir {
					return skipDir(name)
				}
				return err
			}
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				return nil
			}
			b, err := os.ReadFile(name)
			lines += strings.Count(string(b), "\n")
			return err
		})
		require.NoError(t, err)
		require.Greater(t, lines, limit/3, "the walk found %s's code", dir)
		assert.LessOrEqual(t, lines, limit, "%s's library code is %d lines", dir, lines)
	}
}

// skipDir returns filepath.SkipDir for a directory that holds no library
// code of the root module: another module's, examples/, test support,
// testdata.
func skipDir(name string) error {
	if name == "." {
		return nil
	}
	switch filepath.Base(name) {
	case "testdata", "examples", "testsupport", ".git":
		return filepath.SkipDir
	}
	if _, err := os.Stat(filepath.Join(name, "go.mod")); err == nil {
		return filepath.SkipDir
	}
	return nil
}

// complexity is gocyclo's cyclomatic complexity of fn.
func complexity(fn *ast.FuncDecl) int {
	c := 1
	ast.Inspect(fn, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if n.List != nil {
				c++
			}
		case *ast.CommClause:
			if n.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND || n.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}
