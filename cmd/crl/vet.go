package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
)

// sqlxcrlPath is the package whose handles vet looks at.
const sqlxcrlPath = "github.com/crl-go/crl/sqlxcrl"

// embeddedHandles are the embedded sqlx handles of sqlxcrl's types, by
// field name, with what is lost when code takes one out.
var embeddedHandles = map[string]string{
	"DB":        "the embedded *sqlx.DB of a *sqlxcrl.DB: statements run on it are not retried; pass the *sqlxcrl.DB itself (it satisfies sqlx.ExtContext)",
	"Tx":        "the embedded *sqlx.Tx of a *sqlxcrl.Tx: a statement that fails on it is not recorded, so RunInTx checks the rule's query filter against the wrong statement; pass the *sqlxcrl.Tx itself (it satisfies sqlx.ExtContext)",
	"Stmt":      "the embedded *sqlx.Stmt of a *sqlxcrl.Stmt: its executions are not retried; use the *sqlxcrl.Stmt itself",
	"NamedStmt": "the embedded *sqlx.NamedStmt of a *sqlxcrl.NamedStmt: its executions are not retried; use the *sqlxcrl.NamedStmt itself",
}

// listedPackage is what vet reads of `go list -json -export -deps`.
type listedPackage struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Export     string
	DepOnly    bool
	ImportMap  map[string]string
	Error      *struct{ Err string }
}

// finding is one place that loses retries.
type finding struct {
	pos token.Position
	msg string
}

// vet type-checks the packages that patterns name and reports every place
// that takes the embedded sqlx handle out of a sqlxcrl handle other than
// to call a method that runs no statement (db.DB.Stats(),
// db.DB.SetMaxOpenConns(…)). It exits 1 when it finds one, 2 when the
// packages cannot be loaded.
func vet(patterns []string, stdout, stderr io.Writer) int {
	if len(patterns) == 0 {
		patterns = []string{"."}
	}
	pkgs, err := listPackages(patterns)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	var (
		all     []finding
		checked int
	)
	for _, p := range pkgs {
		if p.DepOnly || p.ImportPath == sqlxcrlPath {
			continue // sqlxcrl itself is where the embedded handles belong
		}
		if p.Error != nil {
			fmt.Fprintf(stderr, "crl vet: %s: %s\n", p.ImportPath, p.Error.Err)
			return 2
		}
		found, err := vetPackage(p, pkgs)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		all = append(all, found...)
		checked++
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i].pos, all[j].pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Offset < b.Offset
	})
	for _, f := range all {
		fmt.Fprintf(stdout, "%s: %s\n", f.pos, f.msg)
	}
	if len(all) > 0 {
		fmt.Fprintf(stderr, "crl vet: %d place(s) where a sqlxcrl handle loses its retries\n", len(all))
		return 1
	}
	fmt.Fprintf(stdout, "ok: %d package(s), no sqlxcrl handle loses its retries\n", checked)
	return 0
}

// listPackages runs go list on patterns; the export data of every
// dependency lets vet type-check without loading their sources.
func listPackages(patterns []string) (map[string]*listedPackage, error) {
	args := append([]string{"list", "-e", "-json", "-export", "-deps", "--"}, patterns...)
	cmd := exec.Command("go", args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("crl vet: go list %s: %w\n%s", strings.Join(patterns, " "), err, errOut.String())
	}
	pkgs := map[string]*listedPackage{}
	dec := json.NewDecoder(&out)
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("crl vet: reading go list's output: %w", err)
		}
		pkgs[p.ImportPath] = &p
	}
	return pkgs, nil
}

// vetPackage type-checks one package and returns its findings.
func vetPackage(p *listedPackage, pkgs map[string]*listedPackage) ([]finding, error) {
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, p.Dir+string(os.PathSeparator)+name, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("crl vet: %w", err)
		}
		files = append(files, f)
	}
	lookup := func(path string) (io.ReadCloser, error) {
		if mapped, ok := p.ImportMap[path]; ok {
			path = mapped
		}
		dep, ok := pkgs[path]
		if !ok || dep.Export == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(dep.Export)
	}
	info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", lookup)}
	if _, err := conf.Check(p.ImportPath, fset, files, info); err != nil {
		return nil, fmt.Errorf("crl vet: %s: %w", p.ImportPath, err)
	}
	var found []finding
	for _, f := range files {
		var stack []ast.Node
		ast.Inspect(f, func(n ast.Node) bool {
			if n == nil {
				stack = stack[:len(stack)-1]
				return true
			}
			stack = append(stack, n)
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			what, ok := embeddedHandle(info, sel)
			if !ok || harmlessUse(info, stack) {
				return true
			}
			found = append(found, finding{fset.Position(sel.Sel.Pos()), types.ExprString(sel) + " is " + what})
			return true
		})
	}
	return found, nil
}

// embeddedHandle reports whether sel takes the embedded sqlx handle out of
// a sqlxcrl type, and which.
func embeddedHandle(info *types.Info, sel *ast.SelectorExpr) (string, bool) {
	s, ok := info.Selections[sel]
	if !ok || s.Kind() != types.FieldVal {
		return "", false
	}
	v, ok := s.Obj().(*types.Var)
	if !ok || !v.Embedded() {
		return "", false
	}
	what, ok := embeddedHandles[v.Name()]
	if !ok {
		return "", false
	}
	recv := s.Recv()
	if ptr, ok := recv.(*types.Pointer); ok {
		recv = ptr.Elem()
	}
	named, ok := recv.(*types.Named)
	if !ok || named.Obj().Pkg() == nil || named.Obj().Pkg().Path() != sqlxcrlPath {
		return "", false
	}
	return what, true
}

// harmlessUse reports whether the selector on top of stack is only the
// receiver of a method that runs no statement, or of a field: db.DB.Stats(),
// db.DB.SetMaxOpenConns(10), db.DB.Mapper. Going through db.DB.DB (the
// *sql.DB) is looked at the same way.
func harmlessUse(info *types.Info, stack []ast.Node) bool {
	i := len(stack) - 1
	for i > 0 {
		parent, ok := stack[i-1].(*ast.SelectorExpr)
		if !ok || parent.X != stack[i] {
			return false // used as a value: an argument, an assignment, a return
		}
		s, ok := info.Selections[parent]
		if !ok {
			return false
		}
		switch s.Kind() {
		case types.MethodVal:
			return !runsStatement(parent.Sel.Name)
		case types.FieldVal:
			if v, ok := s.Obj().(*types.Var); ok && v.Embedded() && v.Name() == "DB" {
				i-- // db.DB.DB: the *sql.DB inside, judged by its own use
				continue
			}
			return true // a field such as Mapper
		}
		return false
	}
	return false
}

// runsStatement tells the methods of sqlx's and database/sql's handles that
// run SQL or hand out something that does.
func runsStatement(name string) bool {
	for _, prefix := range []string{"Exec", "Query", "Get", "Select", "Named", "Prepare", "Preparex", "Begin", "MustExec", "MustBegin", "Conn", "Stmt"} {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}
