// Package crlvet is the analyzer of `crl vet`: it reports Go code that
// loses crl's retries, and closures given to crl's retry helpers that are
// not safe to run again.
//
// It is a golang.org/x/tools/go/analysis Analyzer, so it runs wherever
// analyzers run: as `crl vet ./...` (which runs the crlvet command), as
// `go vet -vettool=$(which crlvet) ./...`, from golangci-lint as a module
// plugin (package github.com/crl-go/crl/crlvet/golangci), and in any other
// driver of analyzers (gopls loads none but its own: in an editor it runs
// through golangci-lint's integration). It lives in a module of its own so
// that the library's users do not require golang.org/x/tools.
//
// What it reports, each with the fix in the message:
//
//   - Transactions without a retry: a transaction begun by hand (database/sql
//     Begin/BeginTx, sqlx Beginx/BeginTxx/MustBegin, ent's client.Tx, bun's
//     BeginTx and RunInTx, GORM's db.Transaction and db.Begin) runs once, and
//     no statement inside a transaction is retried on its own. The message
//     names the helper that re-runs the whole transaction on that library's
//     own types: crl.RunInTx, sqlxcrl.RunInTxx (or a *sqlxcrl.DB's RunInTx),
//     gormcrl.Transaction, and for ent and bun crl.Retry around their own
//     transaction.
//   - Closures that are not safe to run again, given to crl.RunInTx,
//     crl.Retry, sqlxcrl.RunInTxx, (*sqlxcrl.DB).RunInTx,
//     gormcrl.Transaction or core's DoTx (a function of the same package
//     given by name is followed as a literal is, and a call of one that
//     writes through its receiver or an argument counts as that write): a
//     write to a variable
//     declared outside the closure whose result depends on what an earlier
//     attempt left (append, ++, +=, x = f(x), a map or slice element,
//     delete) and that the closure does not first reset; a Commit or
//     Rollback of the transaction the closure was given.
//   - sqlx: the embedded *sqlx.DB, *sqlx.Tx, *sqlx.Stmt or *sqlx.NamedStmt
//     taken out of a sqlxcrl handle (db.DB, tx.Tx, …), other than to call
//     a method that runs no statement (db.DB.Stats(), db.DB.SetMaxOpenConns)
//     or to wrap it again (sqlxcrl.NewDb(db.DB.DB, …)); sqlx's package
//     functions that lose a sqlxcrl handle's Mapper or retries.
//   - GORM: statements run on the *sql.DB that db.DB() returns; db.ConnPool
//     taken out of a *gorm.DB.
//
// Whether a *sql.DB, *sqlx.DB, *gorm.DB, ent client or bun.DB runs over a
// pool that crl opened is not known statically, so the checks of those
// handles (transactions, db.DB(), db.ConnPool) run on the packages that
// import a package of crl's module, where the retries are evidently
// intended; the flag -all runs them on every package (for library code
// that receives a handle opened elsewhere). The other checks are about
// crl's own types and helpers and run everywhere.
//
// A transaction begun inside a closure that crl re-runs as a whole (or
// inside the closure of a reported GORM or bun transaction, where it is a
// savepoint) is not reported. A finding is silenced by a directive on its
// line, or alone on the line above, that says why:
//
//	tx, err := db.BeginTx(ctx, nil) //crlvet:ignore runs in the caller's transaction
//
// A directive without a reason silences nothing and is reported itself.
package crlvet

import (
	"reflect"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// The packages the analyzer knows by path.
const (
	crlModule   = "github.com/crl-go/crl"
	crlPath     = crlModule
	corePath    = crlModule + "/core"
	sqlxcrlPath = crlModule + "/sqlxcrl"
	gormcrlPath = crlModule + "/gormcrl"
	sqlxPath    = "github.com/jmoiron/sqlx"
	sqlPath     = "database/sql"
	gormPath    = "gorm.io/gorm"
	entSQLPath  = "entgo.io/ent/dialect/sql"
	bunPath     = "github.com/uptrace/bun"
)

// Analyzer reports code that loses crl's retries, with the default
// Settings; its flag -all sets Settings.All.
var Analyzer = New(Settings{})

// Settings are the analyzer's settings; the zero value checks the handles
// of database/sql, sqlx, GORM, ent and bun in the packages that import a
// package of crl's module only.
type Settings struct {
	// All runs the checks of database/sql, sqlx, GORM, ent and bun handles
	// on every package (false: on those that import a package of crl's
	// module).
	All bool `json:"all"`
	// GormAll is All, under the name it had when only GORM's checks were
	// scoped.
	GormAll bool `json:"gormall"`
}

// Result is what the analyzer tells its driver about one package.
type Result struct {
	// HandlesChecked is false when the package imports no package of
	// crl's module and -all is off: its transactions on database/sql,
	// sqlx, GORM, ent and bun handles were not looked at.
	HandlesChecked bool
}

// New returns an analyzer with the settings s and flags of its own (for
// a driver that runs it configured, such as golangci-lint's plugin).
func New(s Settings) *analysis.Analyzer {
	c := &checker{all: s.All || s.GormAll}
	a := &analysis.Analyzer{
		Name: "crlvet",
		Doc: "report code that loses crl's retries, and retried closures that are not safe to run again\n\n" +
			"crlvet reports transactions begun by hand whose replay crl cannot verify: those of GORM, ent and bun, which read back the generated " +
			"ID of every row they create, and those of database/sql and sqlx that read a generated value and then run another statement, naming " +
			"the helper that re-runs the whole transaction; closures given to crl's retry helpers that " +
			"write variables from outside them without resetting them, or commit or roll back their transaction; " +
			"the embedded sqlx handle taken out of a sqlxcrl handle; GORM's db.DB() and db.ConnPool used to run " +
			"statements; and GORM calls inside crl.Retry's function (or a function it calls) on a *gorm.DB without " +
			"its context, which the unit does not see. Handles of other libraries are checked in packages that import crl (every package with -all). " +
			"//crlvet:ignore <reason> on the line silences a finding.",
		URL:        "https://github.com/crl-go/crl/blob/main/docs/semantics.md#safe-to-run-again",
		Run:        c.run,
		ResultType: reflect.TypeOf((*Result)(nil)),
	}
	a.Flags.BoolVar(&c.all, "all", c.all, "check the handles of database/sql, sqlx, GORM, ent and bun in every package, not only in those that import crl")
	a.Flags.BoolVar(&c.all, "gormall", c.all, "the same as -all (its former name)")
	return a
}

// checker holds the analyzer's flags.
type checker struct {
	all bool
}

func (c *checker) run(pass *analysis.Pass) (any, error) {
	if owns(pass.Pkg.Path()) {
		return &Result{}, nil // where the handles and helpers belong, and their own tests
	}
	p := newPackage(pass)
	handles := c.all || importsCrl(pass)
	for _, f := range pass.Files {
		checkSqlx(p, f)
		checkSqlxPackageCalls(p, f)
		checkTransactions(p, f, handles)
		checkClosures(p, f)
		if handles {
			checkGormConnPool(p, f)
		}
	}
	if handles {
		checkGormSQLDB(p)
		checkGormContext(p)
	}
	return &Result{HandlesChecked: handles}, nil
}

// owns reports whether the package at path is (or tests) one whose code
// the handles and helpers belong to: crl, sqlxcrl, gormcrl and GORM.
func owns(path string) bool {
	path = strings.TrimSuffix(path, "_test")
	if path == crlPath {
		return true
	}
	for _, p := range []string{sqlxcrlPath, gormcrlPath, gormPath} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// importsCrl reports whether the package imports a package of crl's
// module directly.
func importsCrl(pass *analysis.Pass) bool {
	for _, p := range pass.Pkg.Imports() {
		if p.Path() == crlModule || strings.HasPrefix(p.Path(), crlModule+"/") {
			return true
		}
	}
	return false
}
