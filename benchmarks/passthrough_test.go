package benchmarks

import (
	"context"
	"database/sql/driver"
)

// passConnector is the least a database/sql wrapper does, as the floor
// the driver layer's rows are read against (the "wrapper" row of
// BenchmarkDriverLayer, BenchmarkDriverLayerConn and BenchmarkSqlxExec):
// its connection, statements and rows offer exactly the in-memory
// driver's interfaces and hand every call to the driver's, with no work
// of their own; a connection's rows are one value it hands out again
// (no allocation, as crl's own rows), and nothing is read ahead. What a
// wrapper must pay at least for a statement (a frame and an indirect call
// for each of database/sql's calls) is its difference to plain; crl's
// difference to it is crl's own work.
type passConnector struct{ inner driver.Connector }

func (c passConnector) Connect(ctx context.Context) (driver.Conn, error) {
	ci, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	// The in-memory connection has every interface the wrapper offers;
	// a wrapper of any driver finds them once, as crl's does.
	return &passConn{
		inner:     ci,
		execer:    ci.(driver.ExecerContext),
		queryer:   ci.(driver.QueryerContext),
		beginner:  ci.(driver.ConnBeginTx),
		checker:   ci.(driver.NamedValueChecker),
		resetter:  ci.(driver.SessionResetter),
		validator: ci.(driver.Validator),
	}, nil
}

func (c passConnector) Driver() driver.Driver { return c.inner.Driver() }

// passConn wraps a driver's connection: the driver's interfaces are
// called through their interface values, as a wrapper that does not know
// its driver calls them.
type passConn struct {
	inner     driver.Conn
	execer    driver.ExecerContext
	queryer   driver.QueryerContext
	beginner  driver.ConnBeginTx
	checker   driver.NamedValueChecker
	resetter  driver.SessionResetter
	validator driver.Validator
	rows      passRows
}

var (
	_ driver.ExecerContext     = (*passConn)(nil)
	_ driver.QueryerContext    = (*passConn)(nil)
	_ driver.ConnBeginTx       = (*passConn)(nil)
	_ driver.NamedValueChecker = (*passConn)(nil)
	_ driver.SessionResetter   = (*passConn)(nil)
	_ driver.Validator         = (*passConn)(nil)
)

func (c *passConn) CheckNamedValue(nv *driver.NamedValue) error { return c.checker.CheckNamedValue(nv) }
func (c *passConn) ResetSession(ctx context.Context) error      { return c.resetter.ResetSession(ctx) }
func (c *passConn) IsValid() bool                               { return c.validator.IsValid() }
func (c *passConn) Close() error                                { return c.inner.Close() }
func (c *passConn) Begin() (driver.Tx, error)                   { return c.inner.Begin() } //nolint:staticcheck // the driver's, as database/sql's fallback
func (c *passConn) BeginTx(ctx context.Context, o driver.TxOptions) (driver.Tx, error) {
	return c.beginner.BeginTx(ctx, o)
}

func (c *passConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.execer.ExecContext(ctx, query, args)
}

func (c *passConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	ri, err := c.queryer.QueryContext(ctx, query, args)
	if err != nil {
		return nil, err
	}
	return c.wrap(ri), nil
}

func (c *passConn) Prepare(query string) (driver.Stmt, error) {
	si, err := c.inner.Prepare(query)
	if err != nil {
		return nil, err
	}
	return &passStmt{inner: si, cn: c}, nil
}

// wrap returns the connection's rows over ri: database/sql reads one
// query's rows of a connection at a time in these benchmarks, and a
// second open at once gets rows of its own.
func (c *passConn) wrap(ri driver.Rows) driver.Rows {
	if c.rows.inner != nil {
		return &passRows{inner: ri}
	}
	c.rows.inner, c.rows.cn = ri, c
	return &c.rows
}

// passStmt wraps the in-memory driver's statement.
type passStmt struct {
	inner driver.Stmt
	cn    *passConn
}

func (s *passStmt) Close() error  { return s.inner.Close() }
func (s *passStmt) NumInput() int { return s.inner.NumInput() }

func (s *passStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.inner.Exec(args) //nolint:staticcheck // the driver's only form, as database/sql calls it
}

func (s *passStmt) Query(args []driver.Value) (driver.Rows, error) {
	ri, err := s.inner.Query(args) //nolint:staticcheck // the driver's only form, as database/sql calls it
	if err != nil {
		return nil, err
	}
	return s.cn.wrap(ri), nil
}

// passRows wraps the driver's rows; cn is set for the connection's own,
// which are free again once closed.
type passRows struct {
	inner driver.Rows
	cn    *passConn
}

func (r *passRows) Columns() []string              { return r.inner.Columns() }
func (r *passRows) Next(dest []driver.Value) error { return r.inner.Next(dest) }

func (r *passRows) Close() error {
	err := r.inner.Close()
	if r.cn != nil {
		r.inner = nil
	}
	return err
}
