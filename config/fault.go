package config

import "sync/atomic"

// Fault decides which statements of a pool fail, and with what error,
// instead of reaching the driver: crltest.Inject adds one to a pool's
// Runtime (AddFault), and the driver layer asks the pool's faults before
// every statement and COMMIT, so that an injected error goes through the
// same loop, budget, breaker, record and events as the driver's own. Fail
// is called from every goroutine that runs a statement of the pool: it
// must be safe for concurrent use.
type Fault interface {
	// Fail returns the error s gets instead of running, nil to run it; a
	// fault that fails a number of statements counts s.
	Fail(s FaultStatement) error
	// Matches reports whether Fail would fail s now, counting nothing.
	Matches(s FaultStatement) bool
}

// FaultStatement is what a Fault knows of a statement about to run.
type FaultStatement struct {
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
	StatementExec   StatementKind = iota + 1 // ExecContext, of the connection or of a prepared statement
	StatementQuery                           // QueryContext, of the connection or of a prepared statement
	StatementCommit                          // the COMMIT of a transaction (driver.Tx.Commit)
)

// faults is the set of faults of a pool; a stored set is never changed
// (AddFault and its removal store a new one). Each fault sits in an entry
// of its own, so that removal finds it by the entry's address whatever
// the fault's type (an interface holding an uncomparable value would
// panic in ==).
type faults struct {
	list   []*faultEntry
	active []Fault // the faults of list, in order, for the driver layer
}

type faultEntry struct{ f Fault }

// AddFault adds f to the faults of the pool whose Runtime r is, after
// those already there (the first one whose Fail returns an error wins),
// and returns what removes it; calling remove again does nothing. While
// f is there, the pool's Retrier is held (core.Retrier.Hold): no
// statement's first attempt runs directly, past the faults; the driver
// layer's direct path asks nothing else of them.
func (r *Runtime) AddFault(f Fault) (remove func()) {
	e := &faultEntry{f: f}
	release := r.retrier.Hold() // before f can be met
	r.swapFaults(func(old []*faultEntry) []*faultEntry { return append(old[:len(old):len(old)], e) })
	var once atomic.Bool
	return func() {
		if once.Swap(true) {
			return
		}
		r.swapFaults(func(old []*faultEntry) []*faultEntry {
			kept := make([]*faultEntry, 0, len(old))
			for _, g := range old {
				if g != e {
					kept = append(kept, g)
				}
			}
			return kept
		})
		release() // once f is gone
	}
}

// Faults returns the faults added to the pool, in order; nil when there
// are none (always, unless a test injected one), or r is nil. The driver
// layer asks it before every statement that does not run directly (see
// AddFault) and every COMMIT: one atomic load.
func (r *Runtime) Faults() []Fault {
	if r == nil {
		return nil
	}
	if fs := r.faults.Load(); fs != nil {
		return fs.active
	}
	return nil
}

// HasFaults reports whether faults were added to the pool (Faults is not
// empty): one atomic load, small enough to be inlined into the driver
// layer's test before a statement.
func (r *Runtime) HasFaults() bool { return r != nil && r.faults.Load() != nil }

// swapFaults stores edit's set in place of the current one, retried
// until no other change came between the load and the store.
func (r *Runtime) swapFaults(edit func(old []*faultEntry) []*faultEntry) {
	for {
		old := r.faults.Load()
		var list []*faultEntry
		if old != nil {
			list = old.list
		}
		next := &faults{list: edit(list)}
		for _, e := range next.list {
			next.active = append(next.active, e.f)
		}
		if len(next.list) == 0 {
			next = nil
		}
		if r.faults.CompareAndSwap(old, next) {
			return
		}
	}
}
