// Package optdriver is an in-memory database/sql driver for tests of a
// driver wrapper: its connection and its prepared statement offer any
// chosen set of database/sql/driver's optional interfaces (a type per
// set, in combos.go), and it records, in order, what it receives: every
// statement with its arguments' values and types, prepares, transactions,
// pings, session resets, closes. Running the same calls through
// database/sql over the driver alone and over a wrapper, then comparing
// the two records, shows whether database/sql does the same through both.
//
// Statements are run by their text: "FAIL ?" fails with an error of the
// driver's; "BADCONN" answers driver.ErrBadConn the first time the driver
// receives it; "INVALIDATE" makes the connection's IsValid answer false,
// "RESETFAIL" its next ResetSession driver.ErrBadConn; a statement whose
// text begins with "SKIP" run on the connection (not a prepared one) is
// answered driver.ErrSkip and not recorded. Every query returns one row of
// one column, "row".
package optdriver

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
)

// ConnSet is a set of the optional interfaces of a connection.
type ConnSet int

// The optional interfaces of a connection, each a bit of a ConnSet.
const (
	ExecerContext ConnSet = 1 << iota
	Execer
	QueryerContext
	Queryer
	ConnPrepareContext
	ConnBeginTx
	ConnNamedValueChecker
	SessionResetter
	Validator
	Pinger
	connBits = iota
)

// ConnSets is how many sets of connection interfaces there are: every
// ConnSet is below it.
const ConnSets ConnSet = 1 << connBits

// StmtSet is a set of the optional interfaces of a prepared statement.
type StmtSet int

// The optional interfaces of a prepared statement, each a bit of a StmtSet.
const (
	StmtExecContext StmtSet = 1 << iota
	StmtQueryContext
	StmtNamedValueChecker
	ColumnConverter
	stmtBits = iota
)

// StmtSets is how many sets of statement interfaces there are: every
// StmtSet is below it.
const StmtSets StmtSet = 1 << stmtBits

var connNames = [...]string{"ExecerContext", "Execer", "QueryerContext", "Queryer", "ConnPrepareContext",
	"ConnBeginTx", "NamedValueChecker", "SessionResetter", "Validator", "Pinger"}

var stmtNames = [...]string{"StmtExecContext", "StmtQueryContext", "NamedValueChecker", "ColumnConverter"}

// String names the set's interfaces, joined by "+"; "none" for none.
func (s ConnSet) String() string { return setString(int(s), connNames[:]) }

// String names the set's interfaces, joined by "+"; "none" for none.
func (s StmtSet) String() string { return setString(int(s), stmtNames[:]) }

func setString(set int, names []string) string {
	var in []string
	for i, n := range names {
		if set&(1<<i) != 0 {
			in = append(in, n)
		}
	}
	if in == nil {
		return "none"
	}
	return strings.Join(in, "+")
}

// Driver is the driver.Connector of one pool: its connections offer
// Conns' interfaces, their prepared statements Stmts'. Its methods are
// safe for concurrent use.
type Driver struct {
	conns ConnSet
	stmts StmtSet
	// skipArgs: the connection answers driver.ErrSkip to every statement
	// with arguments, as go-sql-driver/mysql without interpolateParams.
	skipArgs bool

	mu         sync.Mutex
	log        []string
	opened     int
	closed     map[int]bool
	badConnRan bool
	rolledBack chan struct{}
}

var _ driver.Connector = (*Driver)(nil)

// New returns a driver whose connections offer conns and whose prepared
// statements offer stmts. With skipArgs, its connection answers
// driver.ErrSkip to every statement with arguments (database/sql then
// prepares it), as go-sql-driver/mysql does without interpolateParams.
func New(conns ConnSet, stmts StmtSet, skipArgs bool) *Driver {
	return &Driver{conns: conns, stmts: stmts, skipArgs: skipArgs,
		closed: map[int]bool{}, rolledBack: make(chan struct{}, 1)}
}

// Note adds a line to the record, for a test to put what its caller got
// between what the driver received.
func (d *Driver) Note(format string, args ...any) {
	d.mu.Lock()
	d.log = append(d.log, fmt.Sprintf(format, args...))
	d.mu.Unlock()
}

// Log returns the record so far.
func (d *Driver) Log() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.log...)
}

// Opened returns how many connections the driver opened; the last one's
// number (connections are numbered from 1).
func (d *Driver) Opened() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.opened
}

// Closed reports whether connection n was closed.
func (d *Driver) Closed(n int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed[n]
}

// RolledBack receives after a transaction's Rollback (one at a time: a
// Rollback does not wait for the receive).
func (d *Driver) RolledBack() <-chan struct{} { return d.rolledBack }

// Connect opens a connection.
func (d *Driver) Connect(context.Context) (driver.Conn, error) {
	d.mu.Lock()
	d.opened++
	c := &conn{d: d, id: d.opened}
	d.mu.Unlock()
	d.Note("#%d open", c.id)
	return connTypes[d.conns](c), nil
}

// Number returns the number of a connection of a Driver (they are
// numbered from 1 in the order they were opened); false for any other
// value.
func Number(c any) (int, bool) {
	n, ok := c.(interface{ number() int })
	if !ok {
		return 0, false
	}
	return n.number(), true
}

// Driver returns the driver.Driver whose Open is Connect.
func (d *Driver) Driver() driver.Driver { return opener{d} }

type opener struct{ d *Driver }

func (o opener) Open(string) (driver.Conn, error) { return o.d.Connect(context.Background()) }

// conn is the state of a connection; the parts below give it its methods,
// each part one interface's.
type conn struct {
	d         *Driver
	id        int
	invalid   bool // IsValid answers false (after INVALIDATE)
	resetFail bool // ResetSession answers driver.ErrBadConn (after RESETFAIL)
}

type (
	fcBase       conn // driver.Conn
	fcExecerCtx  conn
	fcExecer     conn
	fcQueryerCtx conn
	fcQueryer    conn
	fcPrepareCtx conn
	fcBeginTx    conn
	fcChecker    conn
	fcResetter   conn
	fcValidator  conn
	fcPinger     conn
)

func (c *fcBase) number() int                           { return c.id }
func (c *fcBase) Prepare(q string) (driver.Stmt, error) { return (*conn)(c).prepare("Prepare", q) }
func (c *fcBase) Begin() (driver.Tx, error) {
	return (*conn)(c).begin("Begin", driver.TxOptions{})
}
func (c *fcBase) Close() error {
	c.d.Note("#%d close", c.id)
	c.d.mu.Lock()
	c.d.closed[c.id] = true
	c.d.mu.Unlock()
	return nil
}
func (c *fcExecerCtx) ExecContext(_ context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	return (*conn)(c).exec("ExecContext", q, args)
}
func (c *fcExecer) Exec(q string, args []driver.Value) (driver.Result, error) {
	return (*conn)(c).exec("Exec", q, named(args))
}
func (c *fcQueryerCtx) QueryContext(_ context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	return (*conn)(c).query("QueryContext", q, args)
}
func (c *fcQueryer) Query(q string, args []driver.Value) (driver.Rows, error) {
	return (*conn)(c).query("Query", q, named(args))
}
func (c *fcPrepareCtx) PrepareContext(_ context.Context, q string) (driver.Stmt, error) {
	return (*conn)(c).prepare("PrepareContext", q)
}
func (c *fcBeginTx) BeginTx(_ context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return (*conn)(c).begin("BeginTx", opts)
}
func (c *fcChecker) CheckNamedValue(nv *driver.NamedValue) error { return checkArg("conn", nv) }
func (c *fcResetter) ResetSession(context.Context) error {
	c.d.Note("#%d ResetSession", c.id)
	if c.resetFail {
		return driver.ErrBadConn
	}
	return nil
}
func (c *fcValidator) IsValid() bool { return !c.invalid }
func (c *fcPinger) Ping(context.Context) error {
	c.d.Note("#%d Ping", c.id)
	return nil
}

// exec is every execution of the driver, on a connection (method without
// the "Stmt." prefix) or a prepared statement.
func (c *conn) exec(method, q string, args []driver.NamedValue) (driver.Result, error) {
	if !strings.HasPrefix(method, "Stmt.") && (c.d.skipArgs && len(args) > 0 || strings.HasPrefix(q, "SKIP")) {
		return nil, driver.ErrSkip
	}
	c.d.Note("#%d %s %q %s", c.id, method, q, describe(args))
	switch q {
	case "FAIL ?":
		return nil, errors.New("optdriver: FAIL")
	case "BADCONN":
		c.d.mu.Lock()
		ran := c.d.badConnRan
		c.d.badConnRan = true
		c.d.mu.Unlock()
		if !ran {
			return nil, driver.ErrBadConn
		}
	case "INVALIDATE":
		c.invalid = true
	case "RESETFAIL":
		c.resetFail = true
	}
	return driver.RowsAffected(1), nil
}

func (c *conn) query(method, q string, args []driver.NamedValue) (driver.Rows, error) {
	if _, err := c.exec(method, q, args); err != nil {
		return nil, err
	}
	return &rows{c: c, left: 1}, nil
}

func (c *conn) prepare(method, q string) (driver.Stmt, error) {
	c.d.Note("#%d %s %q", c.id, method, q)
	return stmtTypes[c.d.stmts](&stmt{c: c, q: q}), nil
}

func (c *conn) begin(method string, opts driver.TxOptions) (driver.Tx, error) {
	c.d.Note("#%d %s isolation=%d readOnly=%t", c.id, method, opts.Isolation, opts.ReadOnly)
	return tx{c}, nil
}

type tx struct{ c *conn }

func (t tx) Commit() error { t.c.d.Note("#%d Commit", t.c.id); return nil }
func (t tx) Rollback() error {
	t.c.d.Note("#%d Rollback", t.c.id)
	select {
	case t.c.d.rolledBack <- struct{}{}:
	default:
	}
	return nil
}

type rows struct {
	c    *conn
	left int
}

func (r *rows) Columns() []string { return []string{"v"} }
func (r *rows) Close() error      { r.c.d.Note("#%d Rows.Close", r.c.id); return nil }
func (r *rows) Next(dest []driver.Value) error {
	if r.left == 0 {
		return io.EOF
	}
	r.left--
	dest[0] = "row"
	return nil
}

// stmt is the state of a prepared statement; the parts below give it its
// methods. NumInput counts the '?' in its text.
type stmt struct {
	c *conn
	q string
}

type (
	fsBase      stmt // driver.Stmt
	fsExecCtx   stmt
	fsQueryCtx  stmt
	fsChecker   stmt
	fsConverter stmt
)

func (s *fsBase) Close() error  { s.c.d.Note("#%d Stmt.Close %q", s.c.id, s.q); return nil }
func (s *fsBase) NumInput() int { return strings.Count(s.q, "?") }
func (s *fsBase) Exec(args []driver.Value) (driver.Result, error) {
	return s.c.exec("Stmt.Exec", s.q, named(args))
}
func (s *fsBase) Query(args []driver.Value) (driver.Rows, error) {
	return s.c.query("Stmt.Query", s.q, named(args))
}
func (s *fsExecCtx) ExecContext(_ context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.c.exec("Stmt.ExecContext", s.q, args)
}
func (s *fsQueryCtx) QueryContext(_ context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.c.query("Stmt.QueryContext", s.q, args)
}
func (s *fsChecker) CheckNamedValue(nv *driver.NamedValue) error { return checkArg("stmt", nv) }
func (s *fsConverter) ColumnConverter(int) driver.ValueConverter { return moneyConverter{} }

// Money is an argument type that only the statement's ColumnConverter
// knows: it becomes its cents, an int64.
type Money struct{ Cents int64 }

// ConnOnly is an argument type that only the connection's
// NamedValueChecker knows: it becomes "conn:" and its text.
type ConnOnly struct{ S string }

// StmtOnly is an argument type that only the statement's
// NamedValueChecker knows: it becomes "stmt:" and its text.
type StmtOnly struct{ S string }

// Drop is an argument that both NamedValueCheckers remove
// (driver.ErrRemoveArgument).
type Drop struct{}

func checkArg(who string, nv *driver.NamedValue) error {
	switch v := nv.Value.(type) {
	case Drop:
		return driver.ErrRemoveArgument
	case ConnOnly:
		if who == "conn" {
			nv.Value = "conn:" + v.S
			return nil
		}
	case StmtOnly:
		if who == "stmt" {
			nv.Value = "stmt:" + v.S
			return nil
		}
	}
	return driver.ErrSkip
}

// moneyConverter is the statement's ColumnConverter: it knows Money, and
// converts an int16 its own way (into a string naming it), as a driver's
// converter may convert a built-in type otherwise than database/sql's
// default; everything else it leaves to that default.
type moneyConverter struct{}

func (moneyConverter) ConvertValue(v any) (driver.Value, error) {
	switch v := v.(type) {
	case Money:
		return v.Cents, nil
	case int16:
		return fmt.Sprintf("column:int16(%d)", v), nil
	}
	return driver.DefaultParameterConverter.ConvertValue(v)
}

func named(args []driver.Value) []driver.NamedValue {
	nv := make([]driver.NamedValue, len(args))
	for i, a := range args {
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	return nv
}

func describe(args []driver.NamedValue) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d%s:%T(%v)", a.Ordinal, a.Name, a.Value, a.Value)
	}
	b.WriteByte(']')
	return b.String()
}
