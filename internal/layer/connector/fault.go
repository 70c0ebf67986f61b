package connector

import "sync/atomic"

// Injected faults (crltest.Inject). A pool's Connector holds the set of
// faults injected into it; every statement its connections run, and every
// COMMIT of its transactions, asks the set before reaching the driver, so
// an injected error goes through the same loop, budget, breaker, record
// and events as the driver's own. Without a fault the set is nil: one
// atomic load per statement.
//
// A statement with arguments that a fault would fail, run by the
// connection (ExecContext, QueryContext), is answered driver.ErrSkip
// before its loop starts: database/sql then prepares it and runs the
// prepared statement, whose execution the fault fails. The connection
// cannot know before the driver answers whether the driver runs such a
// statement at all (go-sql-driver/mysql without interpolateParams answers
// driver.ErrSkip), and a retry that ended in the driver's ErrSkip would
// return it wrapped, which database/sql does not recognise.

// Fault decides which statements of a pool fail, and with what error,
// instead of reaching the driver. Fail is called from every goroutine
// that runs a statement of the pool: it must be safe for concurrent use.
type Fault interface {
	// Fail returns the error s gets instead of running, nil to run it; a
	// fault that fails a number of statements counts s.
	Fail(s Statement) error
	// Matches reports whether Fail would fail s now, counting nothing.
	Matches(s Statement) bool
}

// Statement is what a Fault knows of a statement about to run.
type Statement struct {
	// Query is the statement's text ("COMMIT" for a COMMIT).
	Query string
	// Kind is how it runs.
	Kind StatementKind
	// InTx reports a statement run inside a transaction (a COMMIT always
	// is).
	InTx bool
}

// StatementKind is how a statement runs.
type StatementKind uint8

// The kinds of statement.
const (
	Exec   StatementKind = iota + 1 // ExecContext, of the connection or of a prepared statement
	Query                           // QueryContext, of the connection or of a prepared statement
	Commit                          // the COMMIT of a transaction (driver.Tx.Commit)
)

// faults is the set of faults of a pool; a stored set is never changed
// (AddFault and its removal store a new one). Each fault sits in an entry
// of its own, so that removal finds it by the entry's address whatever
// the fault's type (an interface holding an uncomparable value would
// panic in ==).
type faults struct{ list []*faultEntry }

type faultEntry struct{ f Fault }

// AddFault adds f to the faults of the pool, after those already there
// (the first one whose Fail returns an error wins), and returns what
// removes it; calling remove again does nothing.
func (c *Connector) AddFault(f Fault) (remove func()) {
	e := &faultEntry{f: f}
	c.swapFaults(func(old []*faultEntry) []*faultEntry { return append(old[:len(old):len(old)], e) })
	var once atomic.Bool
	return func() {
		if once.Swap(true) {
			return
		}
		c.swapFaults(func(old []*faultEntry) []*faultEntry {
			kept := make([]*faultEntry, 0, len(old))
			for _, g := range old {
				if g != e {
					kept = append(kept, g)
				}
			}
			return kept
		})
	}
}

// swapFaults stores edit's set in place of the current one, retried
// until no other change came between the load and the store.
func (c *Connector) swapFaults(edit func(old []*faultEntry) []*faultEntry) {
	for {
		old := c.faults.Load()
		var list []*faultEntry
		if old != nil {
			list = old.list
		}
		next := &faults{list: edit(list)}
		if len(next.list) == 0 {
			next = nil
		}
		if c.faults.CompareAndSwap(old, next) {
			return
		}
	}
}

// injected returns the error an injected fault gives the statement
// query of kind k, nil when none (always, when no fault was injected). It
// is small enough to be inlined: the success path costs one load.
func (cn *conn) injected(query string, k StatementKind) error {
	if cn.c.faults.Load() != nil {
		return cn.fail(query, k)
	}
	return nil
}

// fail is injected's answer when faults were injected.
func (cn *conn) fail(query string, k StatementKind) error {
	fs := cn.c.faults.Load()
	if fs == nil {
		return nil // removed since injected looked
	}
	s := cn.statement(query, k)
	for _, e := range fs.list {
		if err := e.f.Fail(s); err != nil {
			return err
		}
	}
	return nil
}

// toPrepare reports whether a fault would fail the statement query of
// kind k, which has arguments and is run by the connection: it is
// answered driver.ErrSkip, so that the fault fails the prepared
// statement database/sql runs instead (see above). Inlined, as injected.
func (cn *conn) toPrepare(query string, k StatementKind) bool {
	if cn.c.faults.Load() != nil {
		return cn.matches(query, k)
	}
	return false
}

// matches is toPrepare's answer when faults were injected.
func (cn *conn) matches(query string, k StatementKind) bool {
	fs := cn.c.faults.Load()
	if fs == nil {
		return false // removed since toPrepare looked
	}
	s := cn.statement(query, k)
	for _, e := range fs.list {
		if e.f.Matches(s) {
			return true
		}
	}
	return false
}

// statement describes the statement query of kind k for the faults.
func (cn *conn) statement(query string, k StatementKind) Statement {
	return Statement{Query: query, Kind: k, InTx: k == Commit || cn.tx != nil}
}
