package family_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/internal/tables/family"
	"github.com/crl-go/crl/internal/testsupport/familyprobe"
)

func TestOf(t *testing.T) {
	for name, want := range familyprobe.Names() {
		assert.Equal(t, want, family.Of(name), "%q", name)
	}
	assert.Equal(t, family.Postgres, family.Of("PostgreSQL"))
	assert.Equal(t, family.Postgres, family.Of("POSTGRES"))
	for _, f := range family.All() {
		got, ok := family.Parse(f.String())
		assert.True(t, ok)
		assert.Equal(t, f, got)
		assert.Equal(t, f, family.Of(f.Driver()))
	}
	_, ok := family.Parse("sqlite")
	assert.False(t, ok)
	_, ok = family.Parse("other")
	assert.False(t, ok)
	assert.Len(t, family.Names(), 9)
	assert.Equal(t, []family.Family{family.SQLServer, family.MySQL, family.Postgres}, family.All())
	assert.Equal(t, "other", family.Family(200).String(), "a value that is no family is Other")
}

// Of and Parse know every common spelling of each family, in any case.
func TestEverySpelling(t *testing.T) {
	for name, want := range map[string]family.Family{
		"mariadb": family.MySQL, "mysql": family.MySQL,
		"postgres": family.Postgres, "postgresql": family.Postgres, "pgx": family.Postgres, "pgx/v5": family.Postgres,
		"sqlserver": family.SQLServer, "mssql": family.SQLServer, "azuresql": family.SQLServer,
	} {
		for _, spelt := range []string{name, strings.ToUpper(name), strings.ToUpper(name[:1]) + name[1:]} {
			assert.Equal(t, want, family.Of(spelt), "Of(%q)", spelt)
			got, ok := family.Parse(spelt)
			assert.True(t, ok, "Parse(%q)", spelt)
			assert.Equal(t, want, got, "Parse(%q)", spelt)
		}
	}
}

// Every family's entry is complete: what each reader of the table needs
// is there, and the lookups the table builds (Of, OfScheme, OfErrors)
// find the entry again.
func TestProfiles(t *testing.T) {
	shapes := map[family.ErrorShape]family.Family{}
	for _, f := range family.All() {
		p := f.Profile()
		assert.Contains(t, p.Aliases, p.Name, "%s: its own name is one of its names", f)
		assert.Equal(t, f, family.Of(p.Driver), "%s: its driver is one of its names", f)
		assert.NotEqual(t, family.DSNNotRead, p.DSN, "%s: its DSNs are read", f)
		assert.NotEmpty(t, p.BindDriver, "%s: sqlx's bind type", f)
		assert.NotEmpty(t, p.SystemName, "%s: db.system.name", f)
		assert.True(t, p.CutoffByDriver != (p.Cutoff != nil), "%s: a cut-off, by the driver or by statements", f)
		for _, s := range p.Schemes {
			assert.Equal(t, f, family.OfScheme(s), "%s: scheme %s", f, s)
			assert.Equal(t, f, family.OfScheme("JDBC:"+strings.ToUpper(s)), "%s: scheme %s", f, s)
		}
		require.NotEqual(t, family.NoErrors, p.Errors, "%s: its errors are recognised", f)
		assert.NotContains(t, shapes, p.Errors, "%s: an error shape is one family's", f)
		shapes[p.Errors] = f
		assert.Equal(t, f, family.OfErrors(p.Errors))
		if p.TooManyConnections != "" {
			assert.Contains(t, p.Throttle, p.TooManyConnections, "%s: too many connections is throttling", f)
		}
		assert.NotEmpty(t, p.Deadlock, "%s: deadlock", f)
		assert.NotEmpty(t, p.Serialization, "%s: serialization", f)
		assert.NotEmpty(t, p.LockTimeout, "%s: lockTimeout", f)
		assert.NotEmpty(t, p.Failover, "%s: failover", f)
		assert.NotEmpty(t, p.Throttle, "%s: throttle", f)
		seen := map[string]bool{}
		for _, list := range [][]string{p.Deadlock, p.Serialization, p.LockTimeout, p.Failover, p.Throttle, p.CutoffErrors} {
			for _, tok := range list {
				assert.False(t, seen[tok], "%s: %s is classed twice (a cut-off error is a time-out)", f, tok)
				seen[tok] = true
			}
		}
	}
	assert.Equal(t, family.Other, family.OfScheme("sqlite"))
	assert.Equal(t, family.Other, family.OfErrors(family.NoErrors))
	assert.Equal(t, family.Other, family.OfErrors(family.ErrorShape(200)))
	other := family.Other.Profile()
	assert.Empty(t, other.Driver)
	assert.Equal(t, family.DSNNotRead, other.DSN)
	assert.Nil(t, other.Cutoff)
	assert.False(t, other.CutoffByDriver)
}

// The cut-off statements say the cut-off as each server reads it:
// MariaDB in seconds, MySQL and PostgreSQL in milliseconds, never 0
// (which turns the cut-off off).
func TestCutoffStatements(t *testing.T) {
	assert.Equal(t, []string{"SET SESSION max_statement_time = 1.5", "SET SESSION max_execution_time = 1500"},
		family.MySQL.Profile().Cutoff(1500*time.Millisecond))
	assert.Equal(t, []string{"SET statement_timeout = 1"}, family.Postgres.Profile().Cutoff(time.Microsecond))
}

// The packages of the library ask the table what a family does; none
// switches on a family, or compares with one, or keeps a table of its
// own keyed by family, outside the table (benchmarks, examples and test
// support may).
func TestNoFamilySwitchOutsideTheTable(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	d := newDetector(t)
	var found []string
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil || !e.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if skipped(filepath.ToSlash(rel)) {
			return filepath.SkipDir
		}
		found = append(found, d.dir(t, path, rel)...)
		return nil
	})
	require.NoError(t, err)
	assert.Empty(t, found, "per-family behaviour outside internal/tables/family: add a Profile field and read it:\n%s", strings.Join(found, "\n"))
}

// The detector finds a switch, a comparison and a table on a family, by
// its constants (and their aliases) or its driver names, and nothing else.
func TestDetectorIsPrecise(t *testing.T) {
	d := newDetector(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.go"), []byte(`package a

import fam "github.com/crl-go/crl/internal/tables/family"

const mine = fam.MySQL

func a(f fam.Family, name, word string) {
	switch f {
	case fam.SQLServer:
	}
	switch name {
	case "PostgreSQL":
	}
	_ = f == mine
	_ = name != "pgx"
	_ = [...]int{fam.Postgres: 1}
}

func fine(f fam.Family, name, word string) {
	_ = f != fam.Other
	switch word {
	case "begin", "sqlite":
	}
	_ = f.Profile().Driver == name
	_ = word == "select"
}
`), 0o600))
	found := d.dir(t, dir, "a")
	assert.Len(t, found, 5, "%s", strings.Join(found, "\n"))
}

// skipped are the folders whose code may say which family it runs on:
// the table itself, benchmarks, examples, test data and test support
// (crltest builds each driver's own error values).
func skipped(rel string) bool {
	switch rel {
	case "benchmarks", "examples", "internal/tables/family", "internal/testsupport", "mssqltest", "crltest", "conformance", "core/coretest":
		return true
	}
	base := filepath.Base(rel)
	return base == "testdata" || base == "vendor" || strings.HasPrefix(base, ".") && base != "."
}

// detector finds per-family behaviour in Go source: the family constants
// but Other (and constants of another package that alias one), and the
// table's driver names as string literals.
type detector struct {
	consts  map[string]bool // Family's exported constants but Other
	drivers map[string]bool // every name of the table
}

const familyPath = "github.com/crl-go/crl/internal/tables/family"

func newDetector(t *testing.T) *detector {
	d := &detector{consts: map[string]bool{}, drivers: map[string]bool{}}
	f, err := parser.ParseFile(token.NewFileSet(), "family.go", nil, 0)
	require.NoError(t, err)
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		if first, ok := g.Specs[0].(*ast.ValueSpec); !ok || first.Type == nil || !isIdent(first.Type, "Family") {
			continue
		}
		for _, s := range g.Specs {
			for _, n := range s.(*ast.ValueSpec).Names {
				if n.IsExported() && n.Name != "Other" {
					d.consts[n.Name] = true
				}
			}
		}
	}
	require.Len(t, d.consts, len(family.All()), "the family constants of family.go: %v", d.consts)
	for _, n := range family.Names() {
		d.drivers[n] = true
	}
	return d
}

// dir reports the per-family behaviour in the non-test Go files of dir.
func (d *detector) dir(t *testing.T, dir, rel string) []string {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	require.NoError(t, err, "%s", rel)
	var found []string
	for _, pkg := range pkgs {
		files := sortedFiles(pkg)
		aliases := d.aliases(files)
		for _, f := range files {
			c := check{d: d, fset: fset, local: importName(f), aliases: aliases}
			ast.Inspect(f, c.visit)
			found = append(found, c.found...)
		}
	}
	return found
}

func sortedFiles(pkg *ast.Package) []*ast.File {
	var names []string
	for n := range pkg.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	files := make([]*ast.File, 0, len(names))
	for _, n := range names {
		files = append(files, pkg.Files[n])
	}
	return files
}

// aliases are the package's own names of family constants
// (const familySQLServer = family.SQLServer).
func (d *detector) aliases(files []*ast.File) map[string]bool {
	out := map[string]bool{}
	for _, f := range files {
		c := check{d: d, local: importName(f)}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok == token.IMPORT || g.Tok == token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				v := s.(*ast.ValueSpec)
				for i, val := range v.Values {
					if c.familyConst(val) && i < len(v.Names) {
						out[v.Names[i].Name] = true
					}
				}
			}
		}
	}
	return out
}

// importName is the name under which f imports the family package, "" when
// it does not.
func importName(f *ast.File) string {
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p == familyPath {
			if im.Name != nil {
				return im.Name.Name
			}
			return "family"
		}
	}
	return ""
}

// check is the detector's walk over one file.
type check struct {
	d       *detector
	fset    *token.FileSet
	local   string          // the file's name of the family package
	aliases map[string]bool // the package's names of family constants
	found   []string
}

func (c *check) visit(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.SwitchStmt:
		for _, s := range n.Body.List {
			for _, e := range s.(*ast.CaseClause).List {
				if c.perFamily(e) {
					c.report(n, "a switch on a family")
					return true
				}
			}
		}
	case *ast.BinaryExpr:
		if (n.Op == token.EQL || n.Op == token.NEQ) && (c.perFamily(n.X) || c.perFamily(n.Y)) {
			c.report(n, "a comparison with a family")
		}
	case *ast.KeyValueExpr:
		if c.familyConst(n.Key) {
			c.report(n, "a table keyed by family")
		}
	}
	return true
}

func (c *check) report(n ast.Node, what string) {
	c.found = append(c.found, c.fset.Position(n.Pos()).String()+": "+what)
}

// perFamily reports a family constant or a driver name of the table.
func (c *check) perFamily(e ast.Expr) bool {
	if c.familyConst(e) {
		return true
	}
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return false
	}
	s, err := strconv.Unquote(lit.Value)
	return err == nil && c.d.drivers[strings.ToLower(s)]
}

// familyConst reports family.X for a family constant X but Other, or a
// name of the package that aliases one.
func (c *check) familyConst(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.SelectorExpr:
		return c.local != "" && isIdent(e.X, c.local) && c.d.consts[e.Sel.Name]
	case *ast.Ident:
		return c.aliases[e.Name]
	case *ast.ParenExpr:
		return c.familyConst(e.X)
	}
	return false
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
