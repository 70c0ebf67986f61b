package crl

import (
	"context"
	"database/sql/driver"
	"errors"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

// conn is a connection of the driver layer over a connection of the
// chain below (inner). database/sql uses a connection from one goroutine
// at a time, under the connection's lock. It has every optional
// interface; database/sql gets it under a type with those of the
// driver's connection (offer, iface.go).
type conn struct {
	inner driver.Conn
	c     *layerConnector
	r     *core.Retrier

	// The optional interfaces of inner, found once per inner connection;
	// checker, resetter and validator are never nil (none: what
	// database/sql does without one, noChecker and the rest).
	execer    driver.ExecerContext
	execerOld driver.Execer
	queryer   driver.QueryerContext
	queryOld  driver.Queryer
	checker   driver.NamedValueChecker
	resetter  driver.SessionResetter
	validator driver.Validator
	beginner  driver.ConnBeginTx

	tx      *tx        // the transaction running on the connection, nil outside one
	text    txText     // a transaction BeginTx did not begin (txtext.go)
	dialect *txDialect // how the family's statement texts begin and end one (txscan.go)
	gen     uint64     // how many times the connection was replaced (revive); statements re-prepare after
	detour  detour     // the connection's reasons to keep a statement off the direct path, broken and skipsArgs among them (detour.go)

	// The rows of the connection's queries (rows.go): one wrapper and the
	// buffer of its first row, handed out while no other rows of the
	// connection are open, so that a query allocates nothing of the
	// layer's own. database/sql reads one query's rows at a time on a
	// pooled connection; a second query whose rows are opened while
	// these are (in a Tx or a sql.Conn) gets rows of its own.
	own     multiRows
	ownBusy bool
	kind    rowsKind // the type of the driver's rows last handed (multiRows.handed)

	// The last two statement texts the connection ran, whether each may
	// begin a transaction (txDialect.mayBegin), and the rules' answer to
	// whether its query's first row is read in the attempt, under the
	// policy that gave it (core.Retrier.WantsFirstRowMemo): services run
	// the same texts again and again, often two in turn (an UPDATE and a
	// SELECT in a transaction), so a text seen again costs a comparison
	// (of pointers, for the same string; of bytes, for one built anew)
	// instead of a scan. seen[next] is replaced next.
	seen [2]textSeen
	next uint8

	// The connection's transaction object, handed out by BeginTx:
	// database/sql runs one transaction at a time on a connection and
	// calls nothing of it after its Commit or Rollback.
	ownTx tx

	// Transaction replay (replay.go): the record of the transaction
	// running, reused from one transaction to the next.
	rec        core.TxRecord
	results    []*result           // per recorded statement, its exec's result (nil for a query)
	freeResult []result            // exec results not handed out yet (newResult)
	txGen      uint64              // transactions begun on the connection
	replayArgs []driver.NamedValue // a re-sent statement's arguments, reused
}

var (
	_ driver.Conn               = (*conn)(nil)
	_ driver.ConnBeginTx        = (*conn)(nil)
	_ driver.ConnPrepareContext = (*conn)(nil)
	_ driver.ExecerContext      = (*conn)(nil)
	_ driver.QueryerContext     = (*conn)(nil)
	_ driver.Pinger             = (*conn)(nil)
	_ driver.SessionResetter    = (*conn)(nil)
	_ driver.Validator          = (*conn)(nil)
	_ driver.NamedValueChecker  = (*conn)(nil)
)

func newConn(inner driver.Conn, c *layerConnector) *conn {
	cn := &conn{c: c, r: c.retrier, dialect: c.dialect}
	cn.use(inner)
	return cn
}

// use makes inner, a new session, the connection under cn.
func (cn *conn) use(inner driver.Conn) {
	cn.inner = inner
	cn.execer, _ = inner.(driver.ExecerContext)
	cn.execerOld, _ = inner.(driver.Execer) //nolint:staticcheck // database/sql's fallback too
	cn.queryer, _ = inner.(driver.QueryerContext)
	cn.queryOld, _ = inner.(driver.Queryer) //nolint:staticcheck // database/sql's fallback too
	cn.checker, cn.resetter, cn.validator = noChecker{}, noResetter{}, noValidator{}
	if c, ok := inner.(driver.NamedValueChecker); ok {
		cn.checker = c
	}
	if r, ok := inner.(driver.SessionResetter); ok {
		cn.resetter = r
	}
	if v, ok := inner.(driver.Validator); ok {
		cn.validator = v
	}
	cn.beginner, _ = inner.(driver.ConnBeginTx)
	cn.detour = cn.detour&detourTx | cn.legacyDetour() // not broken, ErrSkip not seen yet
	cn.newSession(inner)
}

// legacyDetour is detourLegacy when the driver's connection lacks
// ExecerContext or QueryerContext, else nothing.
func (cn *conn) legacyDetour() detour {
	if cn.execer == nil || cn.queryer == nil {
		return detourLegacy
	}
	return 0
}

// What a driver connection without NamedValueChecker, SessionResetter or
// Validator gets in its place: database/sql's answer without one, so that
// the layer's methods call it without a test.
type (
	noChecker   struct{}
	noResetter  struct{}
	noValidator struct{}
)

// CheckNamedValue answers driver.ErrSkip: database/sql's default
// conversion.
func (noChecker) CheckNamedValue(*driver.NamedValue) error { return driver.ErrSkip }

// ResetSession resets nothing.
func (noResetter) ResetSession(context.Context) error { return nil }

// IsValid reports that the connection is usable: nothing tells otherwise.
func (noValidator) IsValid() bool { return true }

// textSeen is a statement text, whether it may begin a transaction, and
// whether the first row of its query is read inside the attempt (first).
type textSeen struct {
	text   string
	begins bool
	first  uint64 // core.Retrier.WantsFirstRowMemo's memo
}

// mayBegin is cn.dialect.mayBegin(query), remembered for the last two
// texts (seenText: by content).
func (cn *conn) mayBegin(query string) bool {
	if i := cn.seenText(query); i >= 0 {
		return cn.seen[i].begins
	}
	b := cn.dialect.mayBegin(query)
	cn.seen[cn.next] = textSeen{text: query, begins: b}
	cn.next ^= 1
	return b
}

// driverConn returns the connection below, for Unwrap.
func (cn *conn) driverConn() driver.Conn { return cn.inner }

// alone reports whether a statement run with ctx runs once, recorded,
// instead of under the statement loop: inside a transaction that BeginTx
// began, or in a unit. A transaction begun as statement text counts too
// (textControl, asked first). Under WithoutRetry and in no unit it runs
// under the loop, which asks NoRetry after a failure and retries nothing
// (config gives the Retrier NoRetry), so that it is an operation the
// observer sees. One ctx.Value.
func (cn *conn) alone(ctx context.Context) bool {
	return cn.tx != nil || inUnit(ctx)
}

// inUnit reports whether ctx carries a unit (apart from alone, which is
// then inlined: a transaction's statements need not ask).
func inUnit(ctx context.Context) bool { return config.UnitOf(ctx) != nil }

// record records the outcome of a statement run alone: in a transaction
// BeginTx began, its failure in the transaction's record (tx.fail; a
// success is recorded there for the replay, or not at all); else in the
// unit of the transaction begun as text, else in the unit ctx carries.
func (cn *conn) record(ctx context.Context, query string, err error) {
	if t := cn.tx; t != nil {
		if err != nil {
			t.fail(ctx, query, err)
		}
		return
	}
	if err != nil {
		cn.noteBroken(err)
	}
	u := config.UnitOf(ctx)
	if cn.text.unit != nil && cn.inTextTx() {
		u = cn.text.unit
	}
	if u != nil {
		u.Record(cn.r, query, err)
	}
}

// noteBroken marks the connection broken when err says it broke, when
// the driver's connection is no longer valid after err (go-sql-driver/mysql
// and pgx close theirs when the context of a running statement ends: a
// queryTimeout's cut-off), or when err is a failover error (the server
// is read-only, or its database is moving: this connection would meet
// the same server again), so that database/sql takes it out of the pool
// (IsValid, ResetSession), and a retry runs on a new one (revive): a read
// that a rule retries after its connection broke, a statement whose
// time-out a rule retries, a statement a rule retries for a failover (a
// write too: the server refused it, so it was not applied).
func (cn *conn) noteBroken(err error) {
	if err == driver.ErrSkip {
		return
	}
	if core.IsBadConn(err) || cn.r.Failover(err) || !cn.innerValid() {
		cn.markBroken()
	}
}

// innerValid reports whether the connection below says it is usable
// (driver.Validator); true when it cannot tell.
func (cn *conn) innerValid() bool { return cn.validator.IsValid() }

// revive replaces a broken connection with a new one of the pool's
// connector (under the connection loop), before a retry of a statement
// whose connection broke; the statement loop retries only reads then,
// unless the error was not the break itself (a time-out that the driver
// ended by closing its connection, which the rule retries).
func (cn *conn) revive(ctx context.Context) error {
	if !cn.isBroken() {
		return nil
	}
	return cn.reconnect(ctx)
}

// reconnect is revive's replacement of a broken connection.
func (cn *conn) reconnect(ctx context.Context) error {
	if cn.tx != nil {
		return driver.ErrBadConn // never reached: a transaction's statements are not retried
	}
	inner, err := cn.c.connectInner(ctx)
	if err != nil {
		return err
	}
	old := cn.inner
	cn.use(inner) // no longer broken
	cn.gen++
	// The old connection is broken: the error of its Close says nothing
	// the statement's error has not said.
	_ = old.Close()
	return nil
}

// Prepare is PrepareContext with context.Background().
func (cn *conn) Prepare(query string) (driver.Stmt, error) {
	return cn.PrepareContext(context.Background(), query)
}

// PrepareContext prepares query on the connection. The preparation is
// not retried (go-mssqldb's does not reach the server; the statement's
// executions are retried).
func (cn *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	si, err := cn.prepareInner(ctx, query)
	if err != nil {
		cn.record(ctx, query, err)
		return nil, err
	}
	return newStmt(si, cn, query), nil
}

// prepareInner prepares query on the connection below, as database/sql
// would.
func (cn *conn) prepareInner(ctx context.Context, query string) (driver.Stmt, error) {
	if p, ok := cn.inner.(driver.ConnPrepareContext); ok {
		return p.PrepareContext(ctx, query)
	}
	si, err := cn.inner.Prepare(query)
	if err == nil && ctx.Err() != nil {
		_ = si.Close() // database/sql's own fallback drops it too
		return nil, ctx.Err()
	}
	return si, err
}

// ExecContext runs query: under the statement loop outside a transaction
// (begun by BeginTx or as text) and a unit, else once. A connection
// without ExecerContext or Execer answers driver.ErrSkip: database/sql
// then prepares the statement; so does a statement with arguments that
// an injected fault would fail (fault.go).
//
// Most statements take the direct path (ordinary, stmtloop.go), whose
// common case is written out here (ordinary's cost is over the inliner's
// budget; keep the two alike): no detour bit, a text seen before that
// begins no transaction, no unit, and a lean Retrier that lets the
// attempt run directly. The path is then one frame, which calls
// ctx.Value and the driver; every other case is out of line.
func (cn *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if cn.detour != 0 {
		if ok, settle := cn.ordinaryDetour(ctx, query, len(args)); ok {
			return cn.execDirectOr(ctx, query, args, true, settle)
		}
		return cn.execAside(ctx, query, args) // a transaction's statements, among others
	}
	if config.UnitOf(ctx) != nil || !cn.seenPlain(query) {
		return cn.execAside(ctx, query, args) // ordinary says no
	}
	direct, settle, lean := cn.r.DirectLean()
	if !direct {
		return cn.execTold(ctx, query, args, lean)
	}
	res, err := cn.execer.ExecContext(ctx, query, args)
	if err != nil || settle {
		return cn.execDirectEnd(ctx, query, args, res, err)
	}
	return res, nil
}

// execTold is ExecContext for a statement that core.Retrier.DirectLean
// did not let through: off the direct path, unless the Retrier is not
// lean and Direct lets it through.
func (cn *conn) execTold(ctx context.Context, query string, args []driver.NamedValue, lean bool) (driver.Result, error) {
	ok, settle := false, false
	if !lean {
		ok, settle = cn.r.Direct()
	}
	return cn.execDirectOr(ctx, query, args, ok, settle)
}

// execDirectOr runs query directly when ok (settle: ordinary's), else
// off the direct path.
func (cn *conn) execDirectOr(ctx context.Context, query string, args []driver.NamedValue, ok, settle bool) (driver.Result, error) {
	if !ok {
		return cn.execAside(ctx, query, args)
	}
	res, err := cn.execer.ExecContext(ctx, query, args)
	if err != nil || settle {
		return cn.execDirectEnd(ctx, query, args, res, err)
	}
	return res, nil
}

// execAside is ExecContext for a statement off the direct path.
func (cn *conn) execAside(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if cn.execer == nil && cn.execerOld == nil || cn.mayBeSkipped(len(args)) && cn.skipped(query, len(args), kindExec) {
		return nil, driver.ErrSkip
	}
	text, known := cn.knownText(query)
	in := false
	if !known {
		text, in = cn.textControl(query)
	}
	if text || cn.alone(ctx) {
		var (
			res driver.Result
			err error
		)
		if cn.r.BoundsStatements() {
			res, err = cn.execBounded(ctx, nil, query, args)
		} else {
			res, err = cn.execInner(ctx, query, args)
		}
		if err == driver.ErrSkip {
			return nil, err
		}
		if t := cn.recording(); t != nil {
			if err == nil {
				res = cn.recordExec(query, args, res)
			} else {
				res, err = t.execFailed(ctx, query, args, err, cn.execInner)
			}
		}
		cn.ranOnce(ctx, query, err, text, in)
		return res, err
	}
	return cn.execLoop(ctx, query, args)
}

// execBounded runs query once, outside the statement loop (in a
// transaction, a unit, as a transaction's text), by the prepared
// statement s, or by the connection when s is nil, bounded by the
// queryTimeout as an attempt of the loop is
// (core.Retrier.StatementContext). The callers ask
// core.Retrier.BoundsStatements first, inlined: a statement that no
// queryTimeout bounds pays that load.
func (cn *conn) execBounded(ctx context.Context, s *stmt, query string, args []driver.NamedValue) (driver.Result, error) {
	sctx, end := cn.r.StatementContext(ctx, false)
	var (
		res driver.Result
		err error
	)
	if s != nil {
		res, err = s.execInner(sctx, args)
	} else {
		res, err = cn.execInner(sctx, query, args)
	}
	if end != nil {
		end(err)
	}
	return res, err
}

// queryBounded is execBounded for a query: the bound lasts while the
// rows are read, and cancel, for the rows, ends it when they close (nil
// when the query failed).
func (cn *conn) queryBounded(ctx context.Context, s *stmt, query string, args []driver.NamedValue) (driver.Rows, context.CancelFunc, error) {
	sctx, end := cn.r.StatementContext(ctx, true)
	if end == nil { // the queryTimeout changed since the caller asked
		ri, err := cn.queryBy(ctx, s, query, args)
		return ri, nil, err
	}
	qctx, cancel := context.WithCancel(sctx)
	ri, err := cn.queryBy(qctx, s, query, args)
	end(err)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return ri, cancel, nil
}

// queryBy runs query by the prepared statement s, or by the connection
// when s is nil.
func (cn *conn) queryBy(ctx context.Context, s *stmt, query string, args []driver.NamedValue) (driver.Rows, error) {
	if s != nil {
		return s.queryInner(ctx, args)
	}
	return cn.queryInner(ctx, query, args)
}

// execInner runs query on the connection below, as database/sql would.
func (cn *conn) execInner(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if cn.faulty() { // the call only then: the success path inlines the test
		if err := cn.fail(query, kindExec); err != nil {
			return nil, err
		}
	}
	if cn.execer == nil {
		return cn.execLegacy(ctx, query, args)
	}
	res, err := cn.execer.ExecContext(ctx, query, args)
	if err != nil {
		cn.noteSkip(err, args)
	}
	return res, err
}

// execLegacy runs query through the driver's Execer, which takes no
// context, as database/sql would.
func (cn *conn) execLegacy(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	res, err := legacy(ctx, args, func(v []driver.Value) (driver.Result, error) { return cn.execerOld.Exec(query, v) })
	cn.noteSkip(err, args)
	return res, err
}

// skipped reports whether the statement query of kind k with n
// arguments is answered driver.ErrSkip before it runs: the driver
// answered so to a statement with arguments (skipsArgs), or an injected
// fault would fail it (fault.go).
func (cn *conn) skipped(query string, n int, k config.StatementKind) bool {
	return n > 0 && (cn.skipsArgs() || cn.faulty() && cn.matches(query, k))
}

// mayBeSkipped is skipped's test that needs no call, inlined before it:
// false for most statements (no argument, or a driver that never
// answered driver.ErrSkip and no fault injected).
func (cn *conn) mayBeSkipped(n int) bool { return n > 0 && (cn.skipsArgs() || cn.faulty()) }

// noteSkip notes a driver that answers driver.ErrSkip to a statement with
// arguments (database/sql then prepares it; see skipsArgs). Not for a
// driver that runs statements through Execer or Queryer: there, as in
// database/sql's own fallback, named arguments are refused before the
// driver could answer.
func (cn *conn) noteSkip(err error, args []driver.NamedValue) {
	if err == driver.ErrSkip && len(args) > 0 && cn.noLegacyForm() {
		cn.detour |= detourSkips
	}
}

// noLegacyForm reports whether the driver runs no statement through
// Execer or Queryer (it has the context form, or neither).
func (cn *conn) noLegacyForm() bool {
	return (cn.execer != nil || cn.execerOld == nil) && (cn.queryer != nil || cn.queryOld == nil)
}

// QueryContext runs query: under the statement loop outside a transaction
// (begun by BeginTx or as text) and a unit, its first row read inside
// each attempt; else once. A connection without QueryerContext or
// Queryer answers driver.ErrSkip, as does a statement with arguments that
// an injected fault would fail.
func (cn *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	var ok, settle bool
	if cn.detour == 0 && config.UnitOf(ctx) == nil && cn.seenPlain(query) {
		// ordinary's common case written out, as ExecContext has it.
		var lean bool
		if ok, settle, lean = cn.r.DirectLean(); !lean {
			ok, settle = cn.r.Direct()
		}
	} else if cn.detour != 0 {
		ok, settle = cn.ordinaryDetour(ctx, query, len(args))
	}
	if !ok {
		return cn.queryOther(ctx, query, args) // a transaction's statements, among others
	}
	// Most queries (stmtloop.go): the first attempt runs here, as
	// queryAttempt runs one, and goes to the loop only when it failed.
	ri, err := cn.queryer.QueryContext(ctx, query, args)
	if err != nil {
		cn.noteSkip(err, args)
		return cn.queryRetried(ctx, query, nil, args, err)
	}
	rs := newRows(ctx, ri, cn, query, nil, false)
	if cn.r.EveryFirstRow() || cn.wantsFirstRow(query) {
		if err = rs.first(len(ri.Columns())); err != nil {
			return cn.queryRetried(ctx, query, nil, args, err)
		}
	}
	if settle {
		cn.settle(ctx, query, true)
	}
	return rs.handed(), nil
}

// queryOther is QueryContext for a query that is not ordinary: under the
// statement loop, or once (in a transaction, a unit, or as a transaction's
// text); driver.ErrSkip where the driver or a fault says so.
func (cn *conn) queryOther(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if cn.queryer == nil && cn.queryOld == nil || cn.mayBeSkipped(len(args)) && cn.skipped(query, len(args), kindQuery) {
		return nil, driver.ErrSkip
	}
	text, known := cn.knownText(query)
	in := false
	if !known {
		text, in = cn.textControl(query)
	}
	if text || cn.alone(ctx) {
		var (
			ri     driver.Rows
			cancel context.CancelFunc
			err    error
		)
		if cn.r.BoundsStatements() {
			ri, cancel, err = cn.queryBounded(ctx, nil, query, args)
		} else {
			ri, err = cn.queryInner(ctx, query, args)
		}
		if err == driver.ErrSkip {
			return nil, err
		}
		t := cn.recording()
		if err != nil && t != nil {
			ri, err = t.query(ctx, query, err, func(ctx context.Context) (driver.Rows, error) { return cn.queryInner(ctx, query, args) })
		}
		if err != nil {
			cn.ranOnce(ctx, query, err, text, in)
			return nil, err
		}
		if text {
			cn.noteText(ctx, query, nil, in)
		}
		rs := newRows(ctx, ri, cn, query, cancel, true)
		if t != nil {
			cn.recordQuery(query, args, &rs.rows)
		}
		return rs.handed(), nil
	}
	return cn.queryLoop(ctx, query, args)
}

// queryAttempt is one attempt of a query outside a transaction and a
// unit: run with args (on the attempt's context actx) by the prepared
// statement s, or by the connection when s is nil (one call less than a
// function value: the path of every query), then the first row. ctx is
// the caller's, for the events of an error met after the first row.
func (cn *conn) queryAttempt(ctx, actx context.Context, query string, s *stmt, args []driver.NamedValue) (driver.Rows, error) {
	if err := cn.revive(actx); err != nil {
		return nil, err
	}
	// A bounded attempt's context (queryTimeout) lives while the rows are
	// read: the rows end it when they close.
	qctx, cancel := actx, context.CancelFunc(nil)
	if actx != ctx {
		qctx, cancel = context.WithCancel(actx)
	}
	var (
		ri  driver.Rows
		err error
	)
	if s != nil {
		ri, err = s.queryInner(qctx, args)
	} else {
		ri, err = cn.queryInner(qctx, query, args)
	}
	if err == nil {
		rs := newRows(ctx, ri, cn, query, cancel, false)
		if !cn.wantsFirstRow(query) {
			// No rule would retry an error before the first row: it is met
			// while the caller reads, as a later one is, at no cost here.
			return rs.handed(), nil
		}
		if err = rs.first(len(ri.Columns())); err == nil {
			return rs.handed(), nil
		}
	}
	if cancel != nil {
		cancel()
	}
	cn.noteBroken(err)
	return nil, err
}

// queryInner runs query on the connection below, as database/sql would.
func (cn *conn) queryInner(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	var (
		ri  driver.Rows
		err error
	)
	if cn.faulty() { // the call only then: the success path inlines the test
		if err := cn.fail(query, kindQuery); err != nil {
			return nil, err
		}
	}
	if cn.queryer != nil {
		ri, err = cn.queryer.QueryContext(ctx, query, args)
	} else {
		ri, err = legacy(ctx, args, func(v []driver.Value) (driver.Rows, error) { return cn.queryOld.Query(query, v) })
	}
	if err != nil {
		cn.noteSkip(err, args)
	}
	return ri, err
}

// legacy runs a call of a driver without the context forms, as
// database/sql does: the arguments as plain values, ctx checked first.
func legacy[T any](ctx context.Context, args []driver.NamedValue, call func([]driver.Value) (T, error)) (T, error) {
	var zero T
	v, err := plainValues(args)
	if err != nil {
		return zero, err
	}
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	return call(v)
}

// plainArgs is legacy's first half: args as plain values, then ctx
// checked.
func plainArgs(ctx context.Context, args []driver.NamedValue) ([]driver.Value, error) {
	v, err := plainValues(args)
	if err != nil {
		return nil, err
	}
	return v, ctx.Err()
}

// errNamedArgs is database/sql's error for named arguments given to a
// driver without the context forms.
var errNamedArgs = errors.New("sql: driver does not support the use of Named Parameters")

// plainValues returns args' values; named arguments are an error.
func plainValues(args []driver.NamedValue) ([]driver.Value, error) {
	v := make([]driver.Value, len(args))
	for i := range args { // by index: a copy of each argument costs more than the loop
		if args[i].Name != "" {
			return nil, errNamedArgs
		}
		v[i] = args[i].Value
	}
	return v, nil
}

// Begin is BeginTx with context.Background() and the default options.
func (cn *conn) Begin() (driver.Tx, error) {
	return cn.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx begins a transaction on the connection: its statements run
// alone and are recorded in the connection's record (replay.go), which
// the unit of ctx, when it carries one, reads.
func (cn *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	ti, err := cn.beginInner(ctx, opts)
	u, noRetry := config.UnitMark(ctx)
	if err != nil {
		cn.noteBroken(err)
		if u != nil {
			u.Began(cn.r, nil)
		}
		return nil, err
	}
	// Every field, one by one, not a value built aside and copied whole:
	// startRecording sets the replay's others.
	t := &cn.ownTx
	t.inner, t.cn, t.unit, t.ctx, t.underCtx = ti, cn, u, ctx, cn.c.commitUnderContext
	t.rp.stopped = nil
	cn.setTx(t)
	cn.startRecording(cn.tx, opts, noRetry)
	if u != nil {
		u.Began(cn.r, &cn.rec)
	}
	return cn.tx, nil
}

// beginInner begins a transaction on the connection below, as
// database/sql would.
func (cn *conn) beginInner(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if cn.beginner != nil {
		return cn.beginner.BeginTx(ctx, opts)
	}
	if opts.Isolation != driver.IsolationLevel(0) {
		return nil, errors.New("sql: driver does not support non-default isolation level")
	}
	if opts.ReadOnly {
		return nil, errors.New("sql: driver does not support read-only transactions")
	}
	ti, err := cn.inner.Begin() //nolint:staticcheck // database/sql's fallback too
	if err == nil && ctx.Err() != nil {
		_ = ti.Rollback() // database/sql's own fallback drops it too
		return nil, ctx.Err()
	}
	return ti, err
}

// Ping pings the connection below when it can be pinged.
func (cn *conn) Ping(ctx context.Context) error {
	if p, ok := cn.inner.(driver.Pinger); ok {
		err := p.Ping(ctx)
		if err != nil {
			cn.noteBroken(err)
		}
		return err
	}
	return nil
}

// ResetSession refuses a broken connection, else forgets the session's
// transaction and its unit and resets the connection below when it can
// be reset. A connection in none of those states (no detourSession bit:
// the unit of a transaction begun as text is set only while the texts
// say it runs) has nothing to forget.
func (cn *conn) ResetSession(ctx context.Context) error {
	if cn.detour&detourSession == 0 {
		return cn.resetter.ResetSession(ctx)
	}
	return cn.resetHeld(ctx)
}

// resetHeld is ResetSession on a connection with a detourSession bit set.
func (cn *conn) resetHeld(ctx context.Context) error {
	if cn.isBroken() {
		return driver.ErrBadConn
	}
	if cn.tx != nil {
		cn.tx.detach()
	}
	cn.text.unit = nil
	if cn.dialect.resetEnds {
		cn.setTextState(txState{}) // the driver's reset rolls the session's transaction back
	}
	return cn.resetter.ResetSession(ctx)
}

// IsValid reports whether the connection may go back to the pool.
func (cn *conn) IsValid() bool {
	return !cn.isBroken() && cn.innerValid()
}

// CheckNamedValue is the connection's check of an argument; where it
// answers driver.ErrSkip, or there is none, database/sql's default
// conversion (knownValue, else driver.ErrSkip: database/sql's own).
func (cn *conn) CheckNamedValue(nv *driver.NamedValue) error {
	if err := cn.checker.CheckNamedValue(nv); !isError(err, &driver.ErrSkip) {
		return err
	}
	return knownValue(nv)
}

// Close closes the connection below.
func (cn *conn) Close() error { return cn.inner.Close() }
