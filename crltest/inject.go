package crltest

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
)

// Kind selects the statements a Fault matches by how they run.
type Kind uint8

// The kinds a Fault matches.
const (
	// AnyStatement, the zero value, matches every statement (Exec and
	// Query), never a COMMIT.
	AnyStatement Kind = iota
	// Exec matches statements run by ExecContext (of the pool, a
	// connection, a transaction or a prepared statement).
	Exec
	// Query matches statements run by QueryContext and QueryRowContext.
	Query
	// Commit matches the COMMIT of a transaction (Tx.Commit, and the
	// COMMIT of crl.RunInTx, sqlxcrl and gormcrl), and nothing else.
	Commit
)

// Fault says which statements of a pool fail, and with what error, once
// Inject put it there. Its zero value but Err matches every statement.
type Fault struct {
	// Err is the error each matching statement gets, as the driver would
	// return it: Deadlock("mysql"), Serialization("postgres"), or any
	// error of your own. The caller gets it unwrapped when nothing
	// retried it, else wrapped as crl wraps the driver's errors. nil is a
	// mistake that Inject reports (see Check).
	Err error
	// Match selects statements whose text contains it, compared without
	// regard to case ("UPDATE accounts SET balance = balance +"); "" (the
	// zero value) matches every statement. A COMMIT's text is "COMMIT".
	Match string
	// Kind selects statements by how they run; the zero value,
	// AnyStatement, matches every statement but a COMMIT.
	Kind Kind
	// Times is how many matching statements fail, after which the fault
	// lets every statement through (until undo removes it); 0, the zero
	// value, means every matching statement until undo.
	Times int
	// InTx limits the fault to statements run inside a transaction; false,
	// the zero value, matches them inside and outside one. A COMMIT is
	// always inside one.
	InTx bool
	// T, when set, is the test that Inject reports a mistake to
	// (T.Errorf: the test fails) and whose end removes the fault
	// (T.Cleanup). nil: see Check for a mistake, and call undo.
	T testing.TB
}

// Inject makes the next statements of db that f matches fail with f.Err,
// in crl's driver layer, before they reach the driver: the server never
// sees them. An injected error goes through everything a driver's error
// goes through: the rules, the statement and transaction loops, the
// retry budget, the circuit breaker, the observer's events. Several
// faults may be injected into one pool at once (the first injected that
// matches a statement wins); they never reach another pool.
//
// undo removes the fault; calling it again does nothing. Inject never
// panics: on a pool crl did not open (crl.Open, crl.OpenDB, a crl.Register
// driver name, the adapters' Open), or for a Fault that Check refuses, it
// injects nothing and returns an undo that does nothing; it reports the
// error, which names crl.Open, through f.T when set, and Check returns it.
//
// A fault inside a transaction leaves the server's transaction as it
// was: the caller rolls it back after the error, as crl's helpers do. A
// fault at COMMIT rolls the transaction back, as a COMMIT the server
// refused leaves it.
func Inject(db *sql.DB, f Fault) (undo func()) {
	rt, err := pool(db, f)
	if err != nil {
		if f.T != nil {
			f.T.Helper()
			f.T.Errorf("%v", err)
		}
		return func() {}
	}
	undo = rt.AddFault(newInjected(f))
	if f.T != nil {
		f.T.Cleanup(undo)
	}
	return undo
}

// Check returns the error for which Inject would inject nothing, nil when
// it would inject f into db: a pool crl did not open (the error matches
// crl.ErrNotCrlPool and names crl.Open), no Err or one of Deadlock's
// errors for an unknown family (ErrUnknownFamily), a Kind out of range, a
// negative Times.
func Check(db *sql.DB, f Fault) error {
	_, err := pool(db, f)
	return err
}

// errNoErr is Check's error for a Fault without Err.
var errNoErr = errors.New(`crltest: Fault.Err is nil, expected the error to inject, such as crltest.Deadlock("mysql")`)

// pool returns db's Runtime when f can be injected into it.
func pool(db *sql.DB, f Fault) (*config.Runtime, error) {
	switch {
	case f.Err == nil:
		return nil, errNoErr
	case errors.Is(f.Err, ErrUnknownFamily):
		return nil, fmt.Errorf("crltest: Fault.Err: %w", f.Err)
	case f.Kind > Commit:
		return nil, fmt.Errorf("crltest: Fault.Kind %d, expected AnyStatement, Exec, Query or Commit", f.Kind)
	case f.Times < 0:
		return nil, fmt.Errorf("crltest: Fault.Times %d, expected 0 (every matching statement) or more", f.Times)
	}
	rt, ok := crl.RuntimeOf(db) // nil too
	if !ok {
		return nil, fmt.Errorf("crltest: cannot inject a fault: %w", crl.ErrNotCrlPool)
	}
	return rt, nil
}

// injected is a Fault in the driver layer.
type injected struct {
	err   error
	match string
	kind  Kind
	inTx  bool
	times bool         // Times was set: left counts down
	left  atomic.Int64 // failures left; below zero when used up
}

var _ config.Fault = (*injected)(nil)

func newInjected(f Fault) *injected {
	in := &injected{err: f.Err, match: f.Match, kind: f.Kind, inTx: f.InTx, times: f.Times > 0}
	in.left.Store(int64(f.Times))
	return in
}

// Fail returns the fault's error for a statement it matches while it has
// failures left.
func (in *injected) Fail(s config.FaultStatement) error {
	if !in.matches(s) {
		return nil
	}
	if in.times && in.left.Add(-1) < 0 {
		return nil
	}
	return in.err
}

// Matches reports whether Fail would fail s now.
func (in *injected) Matches(s config.FaultStatement) bool {
	return in.matches(s) && (!in.times || in.left.Load() > 0)
}

// matches reports whether s is a statement the fault selects.
func (in *injected) matches(s config.FaultStatement) bool {
	if in.kind == AnyStatement && s.Kind == config.StatementCommit || in.kind != AnyStatement && kinds[in.kind] != s.Kind {
		return false
	}
	if in.inTx && !s.InTx {
		return false
	}
	return containsFold(s.Query, in.match)
}

// kinds is the driver layer's kind of statement each Kind but
// AnyStatement matches.
var kinds = [...]config.StatementKind{Exec: config.StatementExec, Query: config.StatementQuery, Commit: config.StatementCommit}

// containsFold reports whether s contains sub, compared without regard to
// case, without allocating.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}
