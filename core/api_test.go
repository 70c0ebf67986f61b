package core_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// core's public API fits on one screen (issue 31): what `go doc -short
// ./core` lists — each top-level const and var declaration, function and
// type, and each type's constructors and constant groups — is at most 41
// entries (Digest, TxRecord and TxReplay, the transaction replay that
// pgxcrl shares with the driver layer, among them), and the loops report
// to one observer interface.
func TestCoreAPIFitsOnOneScreen(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	require.NoError(t, err)
	pkg, ok := pkgs["core"]
	require.True(t, ok, "package core in %v", pkgs)
	p := doc.New(pkg, "github.com/crl-go/crl/core", 0)

	var listed []string
	for _, v := range append(append([]*doc.Value(nil), p.Consts...), p.Vars...) {
		listed = append(listed, v.Names[0])
	}
	for _, f := range p.Funcs {
		listed = append(listed, f.Name)
	}
	var interfaces []string
	for _, ty := range p.Types {
		listed = append(listed, ty.Name)
		for _, v := range append(append([]*doc.Value(nil), ty.Consts...), ty.Vars...) {
			listed = append(listed, v.Names[0])
		}
		for _, f := range ty.Funcs {
			listed = append(listed, f.Name)
		}
		if _, ok := ty.Decl.Specs[0].(*ast.TypeSpec).Type.(*ast.InterfaceType); ok {
			interfaces = append(interfaces, ty.Name)
		}
	}
	assert.LessOrEqual(t, len(listed), 41, "go doc -short ./core lists %d: %v", len(listed), listed)
	assert.ElementsMatch(t, []string{"Clock", "Observer"}, interfaces,
		"core's interfaces: one observer, and the clock")
}
