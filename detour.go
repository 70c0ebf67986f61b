package crl

// A connection's reasons to keep a statement off the direct path
// (stmtloop.go), as the bits of one word (conn.detour) that the
// connection keeps where each of them changes: the direct path tests
// them with one load, and a bit set sends the statement to the checks
// of each reason on its own (held). The pool's reasons (a circuit
// breaker, an observer that wants OperationEnded, a queryTimeout, an
// injected fault) are the Retrier's: core.Retrier.Direct.
//
// database/sql calls a connection's methods one at a time, under the
// connection's lock (IsValid and ResetSession too), so the word is a
// plain one.
type detour uint8

// The bits of a detour.
const (
	// detourLegacy: the driver's connection lacks ExecerContext or
	// QueryerContext (the direct path calls them).
	detourLegacy detour = 1 << iota
	// detourSkips: the driver answered driver.ErrSkip to a statement with
	// arguments (go-sql-driver/mysql without interpolateParams):
	// database/sql prepares those. It holds only a statement with
	// arguments.
	detourSkips
	// detourTx: a transaction BeginTx began runs on the connection
	// (conn.tx).
	detourTx
	// detourText: the session is in a transaction BeginTx did not begin,
	// by the statement texts' account (txText.state), on a driver that
	// gives no word of its own.
	detourText
	// detourAsk: the driver gives its own word on the session's
	// transaction (txText.driver, pgx), which may change without the
	// layer seeing it: held asks it.
	detourAsk
	// detourBroken: the connection broke (noteBroken); database/sql
	// takes it out of the pool (IsValid, ResetSession), and a retry runs
	// on a new one (revive).
	detourBroken
)

// detourSession are the bits of the session's state: the reasons that
// hold a prepared statement's execution too, and that ResetSession acts
// on.
const detourSession = detourTx | detourText | detourAsk | detourBroken

// detourAlways are the bits that hold every statement of the connection,
// whatever its arguments and the driver's word.
const detourAlways = detourLegacy | detourTx | detourText | detourBroken

// held reports whether the bits d of cn.detour keep a statement off the
// direct path: any of them but detourAsk, or detourAsk when the driver
// says the session is in a transaction. It is asked only when a bit is
// set.
func (cn *conn) held(d detour) bool {
	if d&^detourAsk != 0 {
		return true
	}
	return d != 0 && cn.text.driver.TxStatus() != 'I'
}

// setDetour sets bit b of cn.detour when on, else clears it.
func (cn *conn) setDetour(b detour, on bool) {
	if on {
		cn.detour |= b
	} else {
		cn.detour &^= b
	}
}

// setTx makes t (nil: none) the transaction BeginTx began on the
// connection.
func (cn *conn) setTx(t *tx) {
	cn.tx = t
	cn.setDetour(detourTx, t != nil)
}

// setTextState makes s what the statement texts said of the session's
// transaction.
func (cn *conn) setTextState(s txState) {
	cn.text.state = s
	cn.setDetour(detourText, cn.text.driver == nil && s != txState{})
}

// skipsArgs reports whether the driver answered driver.ErrSkip to a
// statement with arguments (detourSkips).
func (cn *conn) skipsArgs() bool { return cn.detour&detourSkips != 0 }

// isBroken reports whether the connection broke (detourBroken).
func (cn *conn) isBroken() bool { return cn.detour&detourBroken != 0 }

// markBroken notes that the connection broke.
func (cn *conn) markBroken() { cn.detour |= detourBroken }
