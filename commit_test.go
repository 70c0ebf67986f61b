package crl

import (
	"context"
	"database/sql/driver"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/tables/family"
)

// fakeConn is a driver connection that records how its transactions end.
type fakeConn struct {
	driver.Conn
	execs       []string
	plain       []string
	execErr     error
	blockOnExec bool
}

func (c *fakeConn) BeginTx(context.Context, driver.TxOptions) (driver.Tx, error) {
	return fakeTx{c}, nil
}
func (c *fakeConn) Close() error { return nil }

func (c *fakeConn) ExecContext(ctx context.Context, query string, _ []driver.NamedValue) (driver.Result, error) {
	c.execs = append(c.execs, query)
	if c.blockOnExec {
		<-ctx.Done() // the driver's own cancellation, as go-sql-driver/mysql's watcher
		return nil, ctx.Err()
	}
	return driver.RowsAffected(0), c.execErr
}

type fakeTx struct{ c *fakeConn }

func (t fakeTx) Commit() error   { t.c.plain = append(t.c.plain, "COMMIT"); return nil }
func (t fakeTx) Rollback() error { t.c.plain = append(t.c.plain, "ROLLBACK"); return nil }

func (c *fakeConn) Begin() (driver.Tx, error) { return fakeTx{c}, nil }

// layerConn returns a connection of the driver layer over inner, for a
// driver family whose Commit takes no context.
func layerConn(t *testing.T, inner driver.Conn) *conn {
	t.Helper()
	r, err := core.NewRetrier(core.Policy{}, core.Options{})
	require.NoError(t, err)
	return newConn(inner, newConnector(nil, poolSettings{Retrier: r, Family: family.MySQL}))
}

func begin(t *testing.T, ctx context.Context, inner *fakeConn) (*conn, driver.Tx) {
	t.Helper()
	c := layerConn(t, inner)
	tx, err := c.BeginTx(ctx, driver.TxOptions{})
	require.NoError(t, err)
	return c, tx
}

func TestTxContextEndsUnderTheContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inner := &fakeConn{}
	c, tx := begin(t, ctx, inner)
	require.NoError(t, tx.Commit())
	_, tx = begin(t, ctx, inner)
	require.NoError(t, tx.Rollback())
	assert.Equal(t, []string{"COMMIT", "ROLLBACK"}, inner.execs, "run through the context-aware ExecContext")
	assert.Empty(t, inner.plain)
	assert.True(t, c.IsValid())
}

func TestTxContextWithoutDeadlineTakesTheDriversPath(t *testing.T) {
	inner := &fakeConn{}
	_, tx := begin(t, context.Background(), inner)
	require.NoError(t, tx.Commit())
	assert.Equal(t, []string{"COMMIT"}, inner.plain, "a context that ends nothing changes nothing")
	assert.Empty(t, inner.execs)

	inner = &fakeConn{execErr: driver.ErrSkip}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, tx = begin(t, ctx, inner)
	require.NoError(t, tx.Rollback())
	assert.Equal(t, []string{"ROLLBACK"}, inner.plain, "a driver that cannot run it directly ends it its own way")
}

func TestTxContextDeadlineBreaksTheConnection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	inner := &fakeConn{blockOnExec: true}
	c, tx := begin(t, ctx, inner)
	start := time.Now()
	err := tx.Commit()
	assert.Less(t, time.Since(start), time.Second)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.False(t, c.IsValid(), "a connection whose COMMIT was cut off never goes back to the pool")
	assert.ErrorIs(t, c.ResetSession(context.Background()), driver.ErrBadConn)

	outcome := core.CommitFailed(err)
	assert.ErrorIs(t, outcome, core.ErrCommitUnknown)
}

func TestTxContextEndedContextSendsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	inner := &fakeConn{}
	c, tx := begin(t, ctx, inner)
	cancel()
	err := tx.Rollback()
	require.ErrorIs(t, err, driver.ErrBadConn, "database/sql closes the connection, and the server rolls back")
	require.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, inner.execs)
	assert.Empty(t, inner.plain)
	assert.False(t, c.IsValid())

	// A COMMIT too late to send is no success either.
	_, tx = begin(t, ctx, &fakeConn{})
	outcome := core.CommitFailed(tx.Commit())
	assert.ErrorIs(t, outcome, core.ErrCommitUnknown)
}

// The layer answers for an optional interface the driver's connection
// lacks as database/sql would without it.
func TestLayerConnPassesOptionalInterfacesOn(t *testing.T) {
	c := layerConn(t, &fakeConn{})
	_, err := c.QueryContext(context.Background(), "select 1", nil)
	assert.ErrorIs(t, err, driver.ErrSkip)
	assert.ErrorIs(t, c.CheckNamedValue(&driver.NamedValue{Value: struct{}{}}), driver.ErrSkip)
	nv := driver.NamedValue{Value: 7}
	assert.NoError(t, c.CheckNamedValue(&nv), "database/sql's default conversion of a built-in type")
	assert.Equal(t, int64(7), nv.Value)
	assert.NoError(t, c.Ping(context.Background()))
	assert.NoError(t, c.ResetSession(context.Background()))
	assert.True(t, c.IsValid())
}
