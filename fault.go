package crl

import "github.com/crl-go/crl/config"

// Injected faults (crltest.Inject). A pool's Runtime holds the set of
// faults injected into it (config.Runtime.AddFault); every statement
// its connections run, and every COMMIT of its transactions, asks the
// set before reaching the driver, so
// an injected error goes through the same loop, budget, breaker, record
// and events as the driver's own. Without a fault the set is nil: one
// atomic load per statement. The direct path (stmtloop.go) asks nothing:
// while a fault is injected, the pool's Retrier is held
// (core.Retrier.Hold), so that no statement takes that path.
//
// A statement with arguments that a fault would fail, run by the
// connection (ExecContext, QueryContext), is answered driver.ErrSkip
// before its loop starts: database/sql then prepares it and runs the
// prepared statement, whose execution the fault fails. The connection
// cannot know before the driver answers whether the driver runs such a
// statement at all (go-sql-driver/mysql without interpolateParams answers
// driver.ErrSkip), and a retry that ended in the driver's ErrSkip would
// return it wrapped, which database/sql does not recognise.

// The kinds of statement the faults are told, by the names the layer
// uses.
const (
	kindExec   = config.StatementExec
	kindQuery  = config.StatementQuery
	kindCommit = config.StatementCommit
)

// injected returns the error an injected fault gives the statement
// query of kind k, nil when none (always, when no fault was injected).
// A statement's own sites test faulty (inlined) before they call fail,
// so that their success path makes no call; this is COMMIT's.
func (cn *conn) injected(query string, k config.StatementKind) error {
	if cn.faulty() {
		return cn.fail(query, k)
	}
	return nil
}

// faulty reports whether faults were injected into the pool. It is
// small enough to be inlined.
func (cn *conn) faulty() bool { return cn.c.rt.HasFaults() }

// fail is injected's answer when faults were injected.
func (cn *conn) fail(query string, k config.StatementKind) error {
	s := cn.statement(query, k)
	for _, f := range cn.c.rt.Faults() { // none when removed since faulty looked
		if err := f.Fail(s); err != nil {
			return err
		}
	}
	return nil
}

// matches reports whether a fault would fail the statement query of kind
// k, which has arguments and is run by the connection: it is answered
// driver.ErrSkip, so that the fault fails the prepared statement
// database/sql runs instead (see above). Asked only when faulty.
func (cn *conn) matches(query string, k config.StatementKind) bool {
	s := cn.statement(query, k)
	for _, f := range cn.c.rt.Faults() { // none when removed since faulty looked
		if f.Matches(s) {
			return true
		}
	}
	return false
}

// statement describes the statement query of kind k for the faults.
func (cn *conn) statement(query string, k config.StatementKind) config.FaultStatement {
	return config.FaultStatement{Query: query, Kind: k, InTx: k == kindCommit || cn.tx != nil}
}
