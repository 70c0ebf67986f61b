package crl

import (
	"context"
	"database/sql/driver"
	"io"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/tables/family"
)

// numberedErr is a server error with a number, as drivers' errors have.
type numberedErr struct{ n int32 }

func (e *numberedErr) Error() string         { return "server error " + strconv.Itoa(int(e.n)) }
func (e *numberedErr) SQLErrorNumber() int32 { return e.n }

// scriptConn is a driver connection whose statements fail as scripted:
// each query's errors in order, then success; it counts what it ran.
type scriptConn struct {
	fails map[string][]error
	runs  map[string]int
}

func newScriptConn() *scriptConn {
	return &scriptConn{fails: map[string][]error{}, runs: map[string]int{}}
}

func (c *scriptConn) run(query string) error {
	c.runs[query]++
	if errs := c.fails[query]; len(errs) > 0 {
		c.fails[query] = errs[1:]
		return errs[0]
	}
	return nil
}

func (c *scriptConn) ExecContext(_ context.Context, query string, _ []driver.NamedValue) (driver.Result, error) {
	if err := c.run(query); err != nil {
		return nil, err
	}
	return driver.RowsAffected(1), nil
}

func (c *scriptConn) QueryContext(_ context.Context, query string, _ []driver.NamedValue) (driver.Rows, error) {
	if err := c.run(query); err != nil {
		return nil, err
	}
	return emptyRows{}, nil
}

func (c *scriptConn) Prepare(query string) (driver.Stmt, error) { return scriptStmt{c, query}, nil }
func (c *scriptConn) Begin() (driver.Tx, error)                 { return nil, driver.ErrSkip }
func (c *scriptConn) Close() error                              { return nil }

type scriptStmt struct {
	c     *scriptConn
	query string
}

func (s scriptStmt) Close() error  { return nil }
func (s scriptStmt) NumInput() int { return -1 }
func (s scriptStmt) Exec([]driver.Value) (driver.Result, error) {
	return s.c.ExecContext(context.Background(), s.query, nil)
}
func (s scriptStmt) Query([]driver.Value) (driver.Rows, error) {
	return s.c.QueryContext(context.Background(), s.query, nil)
}

type emptyRows struct{}

func (emptyRows) Columns() []string         { return nil }
func (emptyRows) Close() error              { return nil }
func (emptyRows) Next([]driver.Value) error { return io.EOF }

// textConn returns a connection of the driver layer over inner, for fam,
// whose rules retry 1213 three times without waiting.
func textConn(t *testing.T, fam family.Family, inner driver.Conn) *conn {
	t.Helper()
	rules, err := core.ParseStatementRules("{1213:3,0+0}")
	require.NoError(t, err)
	r, err := core.NewRetrier(core.Policy{Statement: rules}, core.Options{})
	require.NoError(t, err)
	return newConn(inner, newConnector(nil, poolSettings{Retrier: r, Family: fam}))
}

const textUpdate = "UPDATE t SET v = v + 1 WHERE id = 2"

// Each family's way of beginning a transaction as text: its statements
// run once, the driver's own error returned; after the end, retried again.
func TestTextTransactionRunsItsStatementsOnce(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		fam        family.Family
		begin, end string
	}{
		{family.MySQL, "START TRANSACTION", "ROLLBACK"},
		{family.MySQL, "SET autocommit = 0", "SET autocommit = 1"},
		{family.Postgres, "BEGIN", "END"},
		{family.SQLServer, "BEGIN TRAN", "ROLLBACK TRAN"},
		{family.SQLServer, "SET IMPLICIT_TRANSACTIONS ON", "ROLLBACK SET IMPLICIT_TRANSACTIONS OFF"}, // OFF leaves the open one open
		{family.Other, "BEGIN", "COMMIT"},
	} {
		t.Run(c.fam.String()+"/"+c.begin, func(t *testing.T) {
			inner := newScriptConn()
			cn := textConn(t, c.fam, inner)
			_, err := cn.ExecContext(ctx, c.begin, nil)
			require.NoError(t, err)
			deadlock := &numberedErr{1213}
			inner.fails[textUpdate] = []error{deadlock, deadlock}
			_, err = cn.ExecContext(ctx, textUpdate, nil)
			assert.Same(t, deadlock, err, "the driver's own error")
			assert.Equal(t, 1, inner.runs[textUpdate], "run once")
			_, err = cn.QueryContext(ctx, textUpdate, nil)
			assert.Same(t, deadlock, err, "a query too")
			assert.Equal(t, 2, inner.runs[textUpdate])

			_, err = cn.ExecContext(ctx, c.end, nil)
			require.NoError(t, err)
			inner.fails[textUpdate] = []error{deadlock}
			_, err = cn.ExecContext(ctx, textUpdate, nil)
			require.NoError(t, err, "retried after the end")
			assert.Equal(t, 4, inner.runs[textUpdate])
		})
	}
}

// A prepared statement, prepared before or during the text transaction,
// runs once in it; a prepared BEGIN begins one.
func TestTextTransactionRunsPreparedStatementsOnce(t *testing.T) {
	ctx := context.Background()
	inner := newScriptConn()
	cn := textConn(t, family.Postgres, inner)
	upd, err := cn.PrepareContext(ctx, textUpdate)
	require.NoError(t, err)
	begin, err := cn.PrepareContext(ctx, "BEGIN")
	require.NoError(t, err)
	_, err = begin.(driver.StmtExecContext).ExecContext(ctx, nil)
	require.NoError(t, err)

	deadlock := &numberedErr{1213}
	inner.fails[textUpdate] = []error{deadlock, deadlock}
	_, err = upd.(driver.StmtExecContext).ExecContext(ctx, nil)
	assert.Same(t, deadlock, err)
	_, err = upd.(driver.StmtQueryContext).QueryContext(ctx, nil)
	assert.Same(t, deadlock, err)
	assert.Equal(t, 2, inner.runs[textUpdate], "each run once")

	_, err = cn.ExecContext(ctx, "COMMIT", nil)
	require.NoError(t, err)
	inner.fails[textUpdate] = []error{deadlock}
	_, err = upd.(driver.StmtExecContext).ExecContext(ctx, nil)
	require.NoError(t, err, "retried after COMMIT")
	assert.Equal(t, 4, inner.runs[textUpdate])
}

// A COMMIT that failed is run once and ends nothing: the session may
// still be in the transaction.
func TestTextTransactionFailedEndRunsOnce(t *testing.T) {
	ctx := context.Background()
	inner := newScriptConn()
	cn := textConn(t, family.MySQL, inner)
	_, err := cn.ExecContext(ctx, "START TRANSACTION", nil)
	require.NoError(t, err)
	deadlock := &numberedErr{1213}
	inner.fails["COMMIT"] = []error{deadlock, deadlock}
	_, err = cn.ExecContext(ctx, "COMMIT", nil)
	assert.Same(t, deadlock, err)
	assert.Equal(t, 1, inner.runs["COMMIT"])
	inner.fails[textUpdate] = []error{deadlock, deadlock}
	_, err = cn.ExecContext(ctx, textUpdate, nil)
	assert.Same(t, deadlock, err)
	assert.Equal(t, 1, inner.runs[textUpdate], "still in the transaction")
}

// The statements of a text transaction are recorded in the Unit of the
// statement that began it, as a BeginTx's are in BeginTx's.
func TestTextTransactionRecordsInItsUnit(t *testing.T) {
	inner := newScriptConn()
	cn := textConn(t, family.Postgres, inner)
	u := &config.Unit{}
	_, err := cn.ExecContext(config.UnitContext(context.Background(), u), "BEGIN", nil)
	require.NoError(t, err)
	deadlock := &numberedErr{1213}
	inner.fails[textUpdate] = []error{deadlock}
	_, err = cn.ExecContext(context.Background(), textUpdate, nil)
	require.Error(t, err)
	q, ferr := u.Failed()
	assert.Equal(t, textUpdate, q)
	assert.Same(t, deadlock, ferr)
	assert.Same(t, cn.r, u.Retrier())

	_, err = cn.ExecContext(context.Background(), "ROLLBACK", nil)
	require.NoError(t, err)
	assert.Nil(t, cn.text.unit, "let go with the transaction")
}

// go-mssqldb's reset rolls the session's transaction back on the server
// (RESETCONNECTION): a text transaction ends with it. go-sql-driver/mysql's
// does not: the transaction, and the layer's account of it, stay.
func TestResetSessionAndTextTransactions(t *testing.T) {
	ctx := context.Background()
	for fam, stays := range map[family.Family]bool{family.SQLServer: false, family.MySQL: true} {
		inner := newScriptConn()
		cn := textConn(t, fam, inner)
		_, err := cn.ExecContext(ctx, "BEGIN TRANSACTION", nil)
		require.NoError(t, err)
		require.NoError(t, cn.ResetSession(ctx))
		inner.fails[textUpdate] = []error{&numberedErr{1213}}
		_, err = cn.ExecContext(ctx, textUpdate, nil)
		assert.Equal(t, stays, err != nil, "%s", fam)
	}
}

// lookalike has pgx's method names but is no pgx connection: the probe
// never calls them.
type lookalike struct {
	scriptConn
	called bool
}

func (l *lookalike) Conn() *lookalike { l.called = true; return l }
func (l *lookalike) PgConn() *status  { l.called = true; return &status{} }

type status struct{}

func (*status) TxStatus() byte { return 'T' }

func TestDriverTxStatusOnlyFromPgx(t *testing.T) {
	assert.Nil(t, driverTxStatus(newScriptConn()))
	l := &lookalike{}
	assert.Nil(t, driverTxStatus(l))
	assert.False(t, l.called, "only pgx's stdlib connection is asked")
	assert.Nil(t, driverTxStatus(nil))
}

// nopConn is a driver connection whose statements do nothing.
type nopConn struct{ driver.Conn }

func (nopConn) ExecContext(context.Context, string, []driver.NamedValue) (driver.Result, error) {
	return driver.RowsAffected(1), nil
}

// The layer's cost on its connection for a statement outside a
// transaction, per family (what reading the text adds shows against
// BenchmarkDriverLayerConn's plain row).
func BenchmarkConnExecOutsideATransaction(b *testing.B) {
	ctx := context.Background()
	for _, fam := range []family.Family{family.Other, family.SQLServer, family.MySQL, family.Postgres} {
		b.Run(fam.String(), func(b *testing.B) {
			r, err := core.NewRetrier(core.Policy{}, core.Options{})
			require.NoError(b, err)
			cn := newConn(nopConn{}, newConnector(nil, poolSettings{Retrier: r, Family: fam}))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := cn.ExecContext(ctx, "UPDATE accounts SET balance = balance + ? WHERE id = ?", nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
