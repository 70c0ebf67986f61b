package pgxcrl_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/pgxcrl"
)

func TestRunInTxRetriesTheWholeTransaction(t *testing.T) {
	a := admin(t)
	f := newFault(t, a)
	tbl := table(t, a, "runintx", "v int")
	p := open(t, "retryExec={40001:3,10ms}", config.WithClock(coretest.NewClock(time.Time{})))
	runs := 0
	err := pgxcrl.RunInTx(context.Background(), p, pgx.TxOptions{IsoLevel: pgx.Serializable}, func(tx pgx.Tx) error {
		runs++
		if _, err := tx.Exec(context.Background(), "INSERT INTO "+tbl+" VALUES (1)"); err != nil {
			return err
		}
		_, err := tx.Exec(context.Background(), "SELECT "+f.call("40001", 2))
		return err
	})
	require.NoError(t, err)
	assert.Equal(t, 3, runs)
	assert.Equal(t, int64(3), f.calls(t))
	assert.Equal(t, int64(1), count(t, a, "SELECT count(*) FROM "+tbl), "the rolled-back runs wrote nothing")
	assert.Equal(t, int32(0), p.Stat().AcquiredConns())
}

func TestRunInTxFilterSeesTheFailedStatement(t *testing.T) {
	a := admin(t)
	f := newFault(t, a)
	p := open(t, "retryExec={40001:3,10ms:insert}", config.WithClock(coretest.NewClock(time.Time{})))
	err := pgxcrl.RunInTx(context.Background(), p, pgx.TxOptions{}, func(tx pgx.Tx) error {
		var v int
		return tx.QueryRow(context.Background(), "SELECT "+f.call("40001", 1)).Scan(&v)
	})
	assert.Equal(t, "40001", sqlState(err), "a SELECT ended it, and the filter names insert")
	assert.Equal(t, int64(1), f.calls(t))
}

func TestRunInTxClosureMustNotCommit(t *testing.T) {
	p := open(t, "")
	err := pgxcrl.RunInTx(context.Background(), p, pgx.TxOptions{}, func(tx pgx.Tx) error {
		return tx.Commit(context.Background())
	})
	assert.ErrorIs(t, err, pgxcrl.ErrTxEndedByClosure)
	assert.Equal(t, int32(0), p.Stat().AcquiredConns())
}

func TestRunInTxNilPool(t *testing.T) {
	err := pgxcrl.RunInTx(context.Background(), nil, pgx.TxOptions{}, func(pgx.Tx) error { return nil })
	require.Error(t, err)
}

func TestRunInTxPanicRollsBack(t *testing.T) {
	a := admin(t)
	tbl := table(t, a, "panic", "v int")
	p := open(t, "")
	assert.PanicsWithValue(t, "boom", func() {
		_ = pgxcrl.RunInTx(context.Background(), p, pgx.TxOptions{}, func(tx pgx.Tx) error {
			_, err := tx.Exec(context.Background(), "INSERT INTO "+tbl+" VALUES (1)")
			if err == nil {
				panic("boom")
			}
			return err
		})
	})
	assert.Equal(t, int64(0), count(t, a, "SELECT count(*) FROM "+tbl))
	assert.Equal(t, int32(0), p.Stat().AcquiredConns())
}

func TestBeginTxStatementsRunOnce(t *testing.T) {
	a := admin(t)
	f := newFault(t, a)
	p := open(t, "retryExec={40P01:3,10ms}", config.WithClock(coretest.NewClock(time.Time{})))
	ctx := context.Background()
	tx, err := p.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "SELECT "+f.call("40P01", 1))
	assert.Equal(t, "40P01", sqlState(err))
	assert.Equal(t, int64(1), f.calls(t), "never retried alone inside a transaction")
	require.NoError(t, tx.Rollback(ctx))
	assert.True(t, errors.Is(tx.Rollback(ctx), pgx.ErrTxClosed))
	assert.Equal(t, int32(0), p.Stat().AcquiredConns())
}
