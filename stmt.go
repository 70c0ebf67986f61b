package crl

import (
	"context"
	"database/sql/driver"

	"github.com/crl-go/crl/config"
)

// stmt is a prepared statement of the driver layer: its executions run
// under the statement loop outside a transaction (begun by BeginTx or as
// text) and a unit, as the connection's statements do. After the
// connection was replaced (revive) it is prepared again on the new one.
type stmt struct {
	inner    driver.Stmt
	cn       *conn
	query    string
	gen      uint64 // the connection's gen it was prepared on
	mayBegin bool   // query may begin a transaction (txDialect.mayBegin), read once
	first    uint64 // whether its query's first row is read in the attempt: core.Retrier.WantsFirstRowMemo's memo
	numInput int    // the driver statement's NumInput, read once per driver statement

	// The optional interfaces of inner, found once per driver statement.
	execer   driver.StmtExecContext
	queryer  driver.StmtQueryContext
	checker  driver.NamedValueChecker
	converts bool // inner has a ColumnConverter: database/sql asks it after the checks
}

var (
	_ driver.Stmt              = (*stmt)(nil)
	_ driver.StmtExecContext   = (*stmt)(nil)
	_ driver.StmtQueryContext  = (*stmt)(nil)
	_ driver.NamedValueChecker = (*stmt)(nil)
)

// stmtConverter is a stmt over a driver's statement that has a
// ColumnConverter, which database/sql asks after the NamedValueChecker.
type stmtConverter struct{ *stmt }

var _ driver.ColumnConverter = stmtConverter{}

// ColumnConverter returns the driver statement's converter.
func (s stmtConverter) ColumnConverter(idx int) driver.ValueConverter {
	return s.inner.(driver.ColumnConverter).ColumnConverter(idx) //nolint:staticcheck // offered only when the driver's statement has it
}

func newStmt(si driver.Stmt, cn *conn, query string) driver.Stmt {
	s := &stmt{cn: cn, query: query, gen: cn.gen, mayBegin: cn.dialect.mayBegin(query)}
	s.use(si)
	if s.converts {
		return stmtConverter{s}
	}
	return s
}

// use makes si, prepared on the connection's gen, the driver's statement
// under s.
func (s *stmt) use(si driver.Stmt) {
	s.inner = si
	s.execer, _ = si.(driver.StmtExecContext)
	s.queryer, _ = si.(driver.StmtQueryContext)
	s.checker, _ = si.(driver.NamedValueChecker)
	_, s.converts = si.(driver.ColumnConverter) //nolint:staticcheck // database/sql asks for it
	s.numInput = si.NumInput()
}

// Close closes the driver's statement.
func (s *stmt) Close() error { return s.inner.Close() }

// NumInput returns the driver statement's count of placeholders, which
// database/sql asks at every execution: read when it was prepared (a
// statement's placeholders do not change).
func (s *stmt) NumInput() int { return s.numInput }

// CheckNamedValue is the statement's check of an argument, else the
// connection's, as database/sql looks for them; where that answers
// driver.ErrSkip, database/sql asks the statement's ColumnConverter when
// it has one (the answer stays), else converts as knownValue does.
func (s *stmt) CheckNamedValue(nv *driver.NamedValue) error {
	var err error
	if s.checker != nil {
		err = s.checker.CheckNamedValue(nv)
	} else {
		err = s.cn.checker.CheckNamedValue(nv) // the connection's driver check, one call less
	}
	if !isError(err, &driver.ErrSkip) || s.converts {
		return err
	}
	return knownValue(nv)
}

// Exec is ExecContext with context.Background() (database/sql calls
// ExecContext).
func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), namedValues(args))
}

// Query is QueryContext with context.Background() (database/sql calls
// QueryContext).
func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), namedValues(args))
}

// textControl is conn.textControl for the statement's query, whose
// reading was done when it was prepared.
func (s *stmt) textControl() (control, in bool) {
	in = s.cn.inTextTx()
	return in || s.mayBegin, in
}

// ExecContext executes the statement: under the statement loop outside a
// transaction (begun by BeginTx or as text) and a unit, else once. As
// conn.ExecContext writes out conn.ordinary's common case, it writes out
// stmt.ordinary's (stmtloop.go; keep the two alike); every other case is
// out of line.
func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	cn := s.cn
	if cn.detour&detourSession != 0 || s.mayBegin || s.gen != cn.gen {
		return s.execHeld(ctx, args)
	}
	if config.UnitOf(ctx) != nil {
		return s.execAside(ctx, args) // stmt.ordinary says no in a unit
	}
	direct, settle, lean := cn.r.DirectLean()
	if !direct {
		return s.execTold(ctx, args, lean)
	}
	res, err := s.execDriver(ctx, args) // no fault: they hold the Retrier
	if err != nil || settle {
		return s.execDirectEnd(ctx, args, res, err)
	}
	return res, nil
}

// execHeld is ExecContext for an execution on a connection with a
// detourSession bit, of a text that may begin a transaction, or of a
// statement prepared on a connection replaced since: stmt.ordinary
// decides.
func (s *stmt) execHeld(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	ok, settle := s.ordinary(ctx)
	return s.execDirectOr(ctx, args, ok, settle)
}

// execTold is conn.execTold for the prepared statement.
func (s *stmt) execTold(ctx context.Context, args []driver.NamedValue, lean bool) (driver.Result, error) {
	ok, settle := false, false
	if !lean {
		ok, settle = s.cn.r.Direct()
	}
	return s.execDirectOr(ctx, args, ok, settle)
}

// execDirectOr runs the execution directly when ok (settle: ordinary's),
// else off the direct path.
func (s *stmt) execDirectOr(ctx context.Context, args []driver.NamedValue, ok, settle bool) (driver.Result, error) {
	if !ok {
		return s.execAside(ctx, args)
	}
	res, err := s.execDriver(ctx, args)
	if err != nil || settle {
		return s.execDirectEnd(ctx, args, res, err)
	}
	return res, nil
}

// execAside is ExecContext for an execution off the direct path.
func (s *stmt) execAside(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if text, in := s.textControl(); text || s.cn.alone(ctx) {
		var (
			res driver.Result
			err error
		)
		if s.cn.r.BoundsStatements() {
			res, err = s.cn.execBounded(ctx, s, s.query, args)
		} else {
			res, err = s.execInner(ctx, args)
		}
		if t := s.cn.recording(); t != nil {
			if err == nil {
				res = s.cn.recordExec(s.query, args, res)
			} else {
				res, err = t.execFailed(ctx, s.query, args, err, func(ctx context.Context, _ string, args []driver.NamedValue) (driver.Result, error) {
					return s.execInner(ctx, args)
				})
			}
		}
		s.cn.ranOnce(ctx, s.query, err, text, in)
		return res, err
	}
	return s.execLoop(ctx, args)
}

// QueryContext runs the statement's query: under the statement loop
// outside a transaction (begun by BeginTx or as text) and a unit, its
// first row read inside each attempt; else once.
func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	var ok, settle bool
	if cn := s.cn; cn.detour&detourSession == 0 && !s.mayBegin && s.gen == cn.gen && config.UnitOf(ctx) == nil {
		// ordinary's common case written out, as ExecContext has it.
		var lean bool
		if ok, settle, lean = cn.r.DirectLean(); !lean {
			ok, settle = cn.r.Direct()
		}
	} else if cn.detour&detourSession != 0 {
		ok, settle = s.ordinary(ctx)
	}
	if !ok {
		return s.queryOther(ctx, args)
	}
	// Most executions (stmtloop.go): the first attempt runs here, as
	// conn.QueryContext runs a query's, with queryInner written out (an
	// ordinary execution has no fault to inject): one call less.
	var (
		cn  = s.cn
		ri  driver.Rows
		err error
	)
	if s.queryer != nil {
		ri, err = s.queryer.QueryContext(ctx, args)
	} else {
		var v []driver.Value
		if v, err = plainArgs(ctx, args); err == nil {
			ri, err = s.inner.Query(v) //nolint:staticcheck // database/sql's fallback too
		}
	}
	if err != nil {
		return cn.queryRetried(ctx, s.query, s, args, err)
	}
	rs := newRows(ctx, ri, cn, s.query, nil, false)
	if cn.r.WantsFirstRowMemo(s.query, &s.first) {
		if err = rs.first(len(ri.Columns())); err != nil {
			return cn.queryRetried(ctx, s.query, s, args, err)
		}
	}
	if settle {
		cn.settle(ctx, s.query, true)
	}
	return rs.handed(), nil
}

// queryOther is QueryContext for an execution that is not ordinary:
// under the statement loop, or once.
func (s *stmt) queryOther(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if text, in := s.textControl(); text || s.cn.alone(ctx) {
		var (
			ri     driver.Rows
			cancel context.CancelFunc
			err    error
		)
		if s.cn.r.BoundsStatements() {
			ri, cancel, err = s.cn.queryBounded(ctx, s, s.query, args)
		} else {
			ri, err = s.queryInner(ctx, args)
		}
		t := s.cn.recording()
		if err != nil && t != nil {
			ri, err = t.query(ctx, s.query, err, func(ctx context.Context) (driver.Rows, error) { return s.queryInner(ctx, args) })
		}
		if err != nil {
			s.cn.ranOnce(ctx, s.query, err, text, in)
			return nil, err
		}
		if text {
			s.cn.noteText(ctx, s.query, nil, in)
		}
		rs := newRows(ctx, ri, s.cn, s.query, cancel, true)
		if t != nil {
			s.cn.recordQuery(s.query, args, &rs.rows)
		}
		return rs.handed(), nil
	}
	return s.queryLoop(ctx, args)
}

// revive prepares the statement again when its connection was replaced
// (after revived it, when it was broken).
func (s *stmt) revive(ctx context.Context) error {
	if err := s.cn.revive(ctx); err != nil {
		return err
	}
	if s.gen == s.cn.gen {
		return nil
	}
	si, err := s.cn.prepareInner(ctx, s.query)
	if err != nil {
		return err
	}
	_ = s.inner.Close() // prepared on the broken connection, closed with it
	s.use(si)
	s.gen = s.cn.gen
	return nil
}

// execInner executes the driver's statement, as database/sql would, once
// the injected faults let it.
func (s *stmt) execInner(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if s.cn.faulty() { // the call only then: the success path inlines the test
		if err := s.cn.fail(s.query, kindExec); err != nil {
			return nil, err
		}
	}
	return s.execDriver(ctx, args)
}

// execDriver executes the driver's statement, as database/sql would.
func (s *stmt) execDriver(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if s.execer != nil {
		return s.execer.ExecContext(ctx, args)
	}
	v, err := plainArgs(ctx, args) // legacy, without a method value
	if err != nil {
		return nil, err
	}
	return s.inner.Exec(v) //nolint:staticcheck // database/sql's fallback too
}

// queryInner runs the driver statement's query, as database/sql would.
func (s *stmt) queryInner(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if s.cn.faulty() { // the call only then: the success path inlines the test
		if err := s.cn.fail(s.query, kindQuery); err != nil {
			return nil, err
		}
	}
	if s.queryer != nil {
		return s.queryer.QueryContext(ctx, args)
	}
	v, err := plainArgs(ctx, args)
	if err != nil {
		return nil, err
	}
	return s.inner.Query(v) //nolint:staticcheck // database/sql's fallback too
}

// namedValues returns args as positional named values.
func namedValues(args []driver.Value) []driver.NamedValue {
	nv := make([]driver.NamedValue, len(args))
	for i, a := range args {
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	return nv
}
