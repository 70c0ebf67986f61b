// Package crlvet is the analyzer of `crl vet`: it reports Go code that
// loses the retries of crl's sqlx and GORM adapters.
//
// It is a golang.org/x/tools/go/analysis Analyzer, so it runs wherever
// analyzers run: as `crl vet ./...` (which runs the crlvet command), as
// `go vet -vettool=$(which crlvet) ./...`, from golangci-lint as a module
// plugin (package github.com/crl-go/crl/crlvet/golangci), and in any other
// driver of analyzers (gopls loads none but its own: in an editor it runs
// through golangci-lint's integration). It lives in a module of its own so that the
// library's users do not require golang.org/x/tools.
//
// What it reports, each with the fix in the message:
//
//   - sqlx: the embedded *sqlx.DB, *sqlx.Tx, *sqlx.Stmt or *sqlx.NamedStmt
//     taken out of a sqlxcrl handle (db.DB, tx.Tx, …), other than to call
//     a method that runs no statement (db.DB.Stats(), db.DB.SetMaxOpenConns).
//   - GORM: db.Transaction and db.Begin on a *gorm.DB (GORM runs the
//     transaction once, and no statement inside it is retried; the fix is
//     gormcrl.Transaction(db, fn)); statements run on the *sql.DB that
//     db.DB() returns; db.ConnPool taken out of a *gorm.DB.
//
// Whether a *gorm.DB carries gormcrl's retries is not known statically (a
// handle opened with gormcrl.Open is an ordinary *gorm.DB), so the GORM
// checks run on the packages that import gormcrl, where a handle's
// retries are evidently intended; the flag -gormall runs them on every
// package (for code that receives a *gorm.DB opened elsewhere). A nested
// Transaction inside the closure of gormcrl.Transaction or of another
// Transaction is a savepoint of a transaction retried (or reported) as a
// whole, and is not reported.
package crlvet

import (
	"go/ast"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// The packages the analyzer knows by path.
const (
	sqlxcrlPath = "github.com/crl-go/crl/sqlxcrl"
	gormcrlPath = "github.com/crl-go/crl/gormcrl"
	gormPath    = "gorm.io/gorm"
)

// Analyzer reports code that loses the retries of crl's adapters, with
// the default Settings; its flag -gormall sets Settings.GormAll.
var Analyzer = New(Settings{})

// Settings are the analyzer's settings; the zero value checks GORM code
// in the packages that import gormcrl only.
type Settings struct {
	// GormAll runs the GORM checks on every package (false: on those that
	// import gormcrl).
	GormAll bool `json:"gormall"`
}

// New returns an analyzer with the settings s and flags of its own (for
// a driver that runs it configured, such as golangci-lint's plugin).
func New(s Settings) *analysis.Analyzer {
	c := &checker{gormAll: s.GormAll}
	a := &analysis.Analyzer{
		Name: "crlvet",
		Doc: "report code that loses the retries of crl's sqlx and GORM adapters\n\n" +
			"crlvet reports the embedded sqlx handle taken out of a sqlxcrl handle, and, in packages " +
			"that import gormcrl (every package with -gormall), db.Transaction and db.Begin on a *gorm.DB, " +
			"statements run on the *sql.DB of db.DB(), and db.ConnPool taken out: each loses the retries; " +
			"the message says what to write instead.",
		URL: "https://github.com/crl-go/crl/blob/main/docs/gorm.md#crl-vet",
		Run: c.run,
	}
	a.Flags.BoolVar(&c.gormAll, "gormall", s.GormAll, "run the GORM checks on every package, not only on those that import gormcrl")
	return a
}

// checker holds the analyzer's flags.
type checker struct {
	gormAll bool
}

func (c *checker) run(pass *analysis.Pass) (any, error) {
	if owns(pass.Pkg.Path()) {
		return nil, nil // where the handles belong, and the adapters' own tests
	}
	gorm := c.gormAll || imports(pass, gormcrlPath)
	for _, f := range pass.Files {
		checkSqlx(pass, f)
		checkSqlxPackageCalls(pass, f)
		if gorm {
			checkGorm(pass, f)
		}
	}
	if gorm {
		checkGormSQLDB(pass)
	}
	return nil, nil
}

// owns reports whether the package at path is (or tests) one whose code
// the handles belong to: sqlxcrl, gormcrl and GORM.
func owns(path string) bool {
	path = strings.TrimSuffix(path, "_test")
	for _, p := range []string{sqlxcrlPath, gormcrlPath, gormPath} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// imports reports whether the package imports path directly.
func imports(pass *analysis.Pass, path string) bool {
	for _, p := range pass.Pkg.Imports() {
		if p.Path() == path {
			return true
		}
	}
	return false
}

// inspectWithStack walks f, calling fn with each node and the nodes that
// enclose it (the node itself last).
func inspectWithStack(f *ast.File, fn func(n ast.Node, stack []ast.Node)) {
	var stack []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, n)
		fn(n, stack)
		return true
	})
}
