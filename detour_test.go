package crl

import (
	"context"
	"database/sql/driver"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/internal/tables/family"
)

// skipArgsConn is a scriptConn that answers driver.ErrSkip to a statement
// with arguments, as go-sql-driver/mysql does without interpolateParams.
type skipArgsConn struct{ *scriptConn }

func (c skipArgsConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if len(args) > 0 {
		return nil, driver.ErrSkip
	}
	return c.scriptConn.ExecContext(ctx, query, args)
}

// The connection's detour word follows what it stands for: a statement
// takes the direct path exactly when none of its bits holds it.
func TestDetourFollowsTheConnection(t *testing.T) {
	ctx := context.Background()
	args := []driver.NamedValue{{Ordinal: 1, Value: int64(1)}}
	direct := func(cn *conn, n int) bool {
		t.Helper()
		_, _ = cn.ExecContext(ctx, textUpdate, nil) // seen, so that only the connection decides
		ok, _ := cn.ordinary(ctx, textUpdate, n)
		return ok
	}

	cn := textConn(t, family.MySQL, newScriptConn())
	assert.Zero(t, cn.detour, "a new connection")
	assert.True(t, direct(cn, 0))
	ok, _ := cn.ordinary(config.UnitContext(ctx, &config.Unit{}), textUpdate, 0)
	assert.False(t, ok, "in a unit")

	_, err := cn.ExecContext(ctx, "START TRANSACTION", nil)
	require.NoError(t, err)
	assert.Equal(t, detourText, cn.detour, "a transaction begun as text")
	assert.False(t, direct(cn, 0))
	require.NoError(t, cn.ResetSession(ctx))
	assert.Equal(t, detourText, cn.detour, "go-sql-driver/mysql's reset leaves it open")
	_, err = cn.ExecContext(ctx, "COMMIT", nil)
	require.NoError(t, err)
	assert.Zero(t, cn.detour, "ended")
	assert.True(t, direct(cn, 0))

	cn = textConn(t, family.SQLServer, newScriptConn())
	_, err = cn.ExecContext(ctx, "BEGIN TRAN", nil)
	require.NoError(t, err)
	require.NoError(t, cn.ResetSession(ctx))
	assert.Zero(t, cn.detour, "go-mssqldb's reset ends it")
	assert.True(t, direct(cn, 0))

	cn.noteBroken(driver.ErrBadConn)
	assert.Equal(t, detourBroken, cn.detour)
	ok, _ = cn.ordinary(ctx, textUpdate, 0) // no Exec: a broken connection would be replaced
	assert.False(t, ok)
	assert.False(t, cn.IsValid())
	assert.ErrorIs(t, cn.ResetSession(ctx), driver.ErrBadConn)

	cn = textConn(t, family.MySQL, skipArgsConn{newScriptConn()})
	_, err = cn.ExecContext(ctx, textUpdate, args)
	require.ErrorIs(t, err, driver.ErrSkip)
	assert.Equal(t, detourSkips, cn.detour, "the driver skips statements with arguments")
	assert.True(t, direct(cn, 0), "not those without")
	assert.False(t, direct(cn, 1))
	_, err = cn.ExecContext(ctx, textUpdate, args)
	assert.ErrorIs(t, err, driver.ErrSkip, "answered before it runs")
}

// A transaction BeginTx began holds its connection's statements off the
// direct path until it ends.
func TestDetourFollowsTheTransaction(t *testing.T) {
	ctx := context.Background()
	inner := &beginConn{scriptConn: newScriptConn()}
	cn := textConn(t, family.MySQL, inner)
	tx, err := cn.BeginTx(ctx, driver.TxOptions{})
	require.NoError(t, err)
	assert.Equal(t, detourTx, cn.detour)
	require.NoError(t, tx.Commit())
	assert.Zero(t, cn.detour, "committed")
	_, err = cn.BeginTx(ctx, driver.TxOptions{})
	require.NoError(t, err)
	require.NoError(t, cn.ResetSession(ctx), "a transaction neither committed nor rolled back")
	assert.Zero(t, cn.detour, "let go")
}

// beginConn is a scriptConn whose transactions begin and end.
type beginConn struct{ *scriptConn }

func (c *beginConn) Begin() (driver.Tx, error) { return nopTx{}, nil }

type nopTx struct{}

func (nopTx) Commit() error   { return nil }
func (nopTx) Rollback() error { return nil }
