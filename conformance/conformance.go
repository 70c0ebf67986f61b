// Package conformance is the suite of semantics checks that every adapter
// of crl passes (sqlxcrl and gormcrl run it; an adapter of your own, for
// another ORM, can run it too). An adapter implements Handle, a small
// adapter-neutral view of one database handle, and calls Run from a test:
//
//	func TestConformance(t *testing.T) { conformance.Run(t, openMyHandle) }
//
// Run checks the statement and connection loops, batches and procedure
// calls, and the whole-transaction retry against mssqltest with the real
// go-mssqldb driver (the adapter's Open must use it for "sqlserver"); then
// data integrity under real contention against MariaDB and PostgreSQL when
// CRL_MYSQL_DSN and CRL_POSTGRES_DSN name them (each check skips without
// its DSN): deadlocked transfers that lose and duplicate nothing, a batch
// under lock contention that is not retried, an error met while rows are
// read that is the transaction's failed statement, a COMMIT answered with
// ROLLBACK whose outcome is known, a PREPARE the server refuses that is the
// transaction's failed statement (for an adapter whose Tx is a
// PreparingTx).
//
// It is a package of its own, not part of core/coretest, so that a test
// that only needs coretest's virtual clock does not link a TDS server.
package conformance

import (
	"context"
	"database/sql"
	"testing"

	"github.com/crl-go/crl/config"
)

// Handle is what an adapter gives the suite: one database handle opened
// by the adapter, seen through the adapter's own API.
type Handle interface {
	// Exec runs a statement outside any transaction, under the statement
	// loop.
	Exec(ctx context.Context, query string, args ...any) error
	// ReadAll runs a query outside any transaction, under the statement
	// loop, and returns the first column of every row as an int64.
	ReadAll(ctx context.Context, query string) ([]int64, error)
	// ReadOne runs a one-row query outside any transaction, under the
	// statement loop, and returns the first column of its first row as an
	// int64; other rows are left unread.
	ReadOne(ctx context.Context, query string) (int64, error)
	// InTx runs fn in a transaction under the adapter's whole-transaction
	// retry (sqlxcrl's RunInTx, gormcrl's Transaction).
	InTx(ctx context.Context, fn func(tx Tx) error) error
	// DB returns the *sql.DB under the handle, for the suite's own set-up,
	// checks and lock holders, which must not go through the adapter.
	DB() *sql.DB
	// Close closes the handle.
	Close() error
}

// Tx is a transaction of Handle.InTx, seen through the adapter's API.
type Tx interface {
	// Exec runs a statement in the transaction.
	Exec(query string, args ...any) error
	// ReadAll runs a query in the transaction and reads every row; its
	// error is the query's or the first met while reading the rows.
	ReadAll(query string, args ...any) error
}

// ReadingTx is a Tx that also reads one integer (a balance) in the
// transaction, for the read-modify-write workloads.
type ReadingTx interface {
	Tx
	// ReadInt runs a one-row query in the transaction and returns its
	// first column.
	ReadInt(query string, args ...any) (int64, error)
}

// PreparingTx is a Tx that also prepares statements in the transaction
// (sqlxcrl's Tx.Preparex, GORM's PrepareStmt mode). The checks of
// statements prepared in a transaction skip an adapter whose Tx is not
// one.
type PreparingTx interface {
	Tx
	// Prepare prepares query in the transaction. An adapter that prepares
	// on first use (GORM) may send the PREPARE with the first Exec.
	Prepare(query string) (Prepared, error)
}

// Prepared is a statement prepared in a transaction of Handle.InTx.
type Prepared interface {
	// Exec executes the statement with args.
	Exec(args ...any) error
}

// Open opens a Handle on driverName ("sqlserver", "mysql" or "pgx") with
// dsn, which may carry the retry settings as parameters, and opts. It
// connects (and so runs the connection loop) before it returns.
type Open func(t *testing.T, driverName, dsn string, opts ...config.Option) (Handle, error)

// check is one conformance check.
type check struct {
	name string
	run  func(t *testing.T, open Open)
}

// Run runs every check, each as a subtest: the semantics against mssqltest,
// then the data-integrity checks against the real databases whose DSNs are
// set.
func Run(t *testing.T, open Open) {
	for _, group := range []struct {
		name   string
		checks []check
	}{{"mssqltest", semantics}, {"real", integrity}} {
		t.Run(group.name, func(t *testing.T) {
			for _, c := range group.checks {
				t.Run(c.name, func(t *testing.T) { c.run(t, open) })
			}
		})
	}
}
