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

// TestSavepointsAreReplayedLikeAnyStatement: a transaction with
// savepoints (pgx.Tx.Begin on it, nested, released and rolled back to)
// is replayed after an error that ended it, whether the error came in a
// savepoint or after one: the savepoints' statements are re-sent in
// order, the caller never knows, and each write is applied once and
// only where no rollback to a savepoint undid it.
func TestSavepointsAreReplayedLikeAnyStatement(t *testing.T) {
	a := admin(t)
	p := open(t, "retryExec={40P01:3,10ms}", config.WithClock(coretest.NewClock(time.Time{})))
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		fail func(t *testing.T, tx, sp pgx.Tx, f fault) // runs the failing statement
	}{
		{"in the savepoint", func(t *testing.T, _, sp pgx.Tx, f fault) {
			_, err := sp.Exec(ctx, "SELECT "+f.call("40P01", 1))
			require.NoError(t, err, "replayed: the caller never knows")
			require.NoError(t, sp.Commit(ctx))
		}},
		{"after it was released", func(t *testing.T, tx, sp pgx.Tx, f fault) {
			require.NoError(t, sp.Commit(ctx))
			var v int
			require.NoError(t, tx.QueryRow(ctx, "SELECT "+f.call("40P01", 1)).Scan(&v), "replayed: the caller never knows")
		}},
		{"a query in the savepoint", func(t *testing.T, _, sp pgx.Tx, f fault) {
			rows, err := sp.Query(ctx, "SELECT "+f.call("40P01", 1))
			require.NoError(t, err, "replayed: the caller never knows")
			rows.Close()
			require.NoError(t, rows.Err())
			require.NoError(t, sp.Commit(ctx))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFault(t, a)
			tbl := table(t, a, "savepoint", "v int")
			tx := begin(t, ctx, p, pgx.TxOptions{})
			_, err := tx.Exec(ctx, "INSERT INTO "+tbl+" VALUES (1)")
			require.NoError(t, err)
			sp, err := tx.Begin(ctx)
			require.NoError(t, err)
			_, err = sp.Exec(ctx, "INSERT INTO "+tbl+" VALUES (2)")
			require.NoError(t, err)
			inner, err := sp.Begin(ctx)
			require.NoError(t, err)
			_, err = inner.Exec(ctx, "INSERT INTO "+tbl+" VALUES (3)")
			require.NoError(t, err)
			require.NoError(t, inner.Rollback(ctx), "rolled back to: its INSERT is undone")
			assert.ErrorIs(t, inner.Rollback(ctx), pgx.ErrTxClosed, "a deferred Rollback after the end is safe, as pgx's")
			tc.fail(t, tx, sp, f)
			require.NoError(t, tx.Commit(ctx))
			assert.Equal(t, int64(2), f.calls(t), "the failed statement ran again once")
			assert.Equal(t, int64(2), count(t, a, "SELECT count(*) FROM "+tbl), "rows 1 and 2, each applied once")
			assert.Equal(t, int64(1), count(t, a, "SELECT count(*) FROM "+tbl+" WHERE v = 2"))
			assert.Equal(t, int32(0), p.Stat().AcquiredConns())
		})
	}
}

// TestSavepointAfterItsEnd: a savepoint released or rolled back to
// refuses what pgx's refuses then, with pgx.ErrTxClosed, without
// reaching the server; the transaction goes on.
func TestSavepointAfterItsEnd(t *testing.T) {
	p := open(t, "")
	ctx := context.Background()
	tx := begin(t, ctx, p, pgx.TxOptions{})
	sp, err := tx.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, sp.Commit(ctx))
	assert.ErrorIs(t, sp.Commit(ctx), pgx.ErrTxClosed)
	assert.ErrorIs(t, sp.Rollback(ctx), pgx.ErrTxClosed)
	_, err = sp.Exec(ctx, "SELECT 1")
	assert.ErrorIs(t, err, pgx.ErrTxClosed)
	rows, err := sp.Query(ctx, "SELECT 1")
	assert.ErrorIs(t, err, pgx.ErrTxClosed)
	assert.False(t, rows.Next())
	assert.ErrorIs(t, rows.Err(), pgx.ErrTxClosed)
	var v int
	assert.ErrorIs(t, sp.QueryRow(ctx, "SELECT 1").Scan(&v), pgx.ErrTxClosed)
	_, err = sp.Begin(ctx)
	assert.ErrorIs(t, err, pgx.ErrTxClosed)
	_, err = sp.Prepare(ctx, "s", "SELECT 1")
	assert.ErrorIs(t, err, pgx.ErrTxClosed)
	_, err = sp.CopyFrom(ctx, pgx.Identifier{"t"}, []string{"v"}, pgx.CopyFromRows(nil))
	assert.ErrorIs(t, err, pgx.ErrTxClosed)
	assert.ErrorIs(t, sp.SendBatch(ctx, &pgx.Batch{}).Close(), pgx.ErrTxClosed)
	require.NoError(t, tx.QueryRow(ctx, "SELECT 1").Scan(&v), "the transaction goes on")
	require.NoError(t, tx.Commit(ctx))
}

// TestSavepointInRunInTx: RunInTx's closure may begin, release and roll
// back to savepoints (only the transaction's own Commit and Rollback are
// RunInTx's).
func TestSavepointInRunInTx(t *testing.T) {
	a := admin(t)
	tbl := table(t, a, "sprun", "v int")
	p := open(t, "")
	err := pgxcrl.RunInTx(context.Background(), p, pgx.TxOptions{}, func(tx pgx.Tx) error {
		ctx := context.Background()
		sp, err := tx.Begin(ctx)
		if err != nil {
			return err
		}
		if _, err := sp.Exec(ctx, "INSERT INTO "+tbl+" VALUES (1)"); err != nil {
			return err
		}
		return sp.Commit(ctx)
	})
	require.NoError(t, err)
	assert.Equal(t, int64(1), count(t, a, "SELECT count(*) FROM "+tbl))
}

// TestSavepointRollbackAfterAFailureIsNotTheFailure: RunInTx's query
// filter is checked against the statement whose error ended the
// transaction, not against a ROLLBACK TO SAVEPOINT that failed after it
// (core.TxRecord.Fail, the rule of the database/sql layer): the closure
// runs again for the UPDATE the filter names.
func TestSavepointRollbackAfterAFailureIsNotTheFailure(t *testing.T) {
	a := admin(t)
	f := newFault(t, a)
	tbl := table(t, a, "sprollback", "v int")
	mustExec(t, a, "INSERT INTO "+tbl+" VALUES (0)")
	p := open(t, "retryExec={40P01:3,10ms:update}&txReplay=off", config.WithClock(coretest.NewClock(time.Time{})))
	runs := 0
	err := pgxcrl.RunInTx(context.Background(), p, pgx.TxOptions{}, func(tx pgx.Tx) error {
		ctx := context.Background()
		runs++
		sp, err := tx.Begin(ctx)
		if err != nil {
			return err
		}
		// The savepoint is gone, so that rolling back to it fails.
		if _, err := tx.Exec(ctx, "release savepoint sp_1"); err != nil {
			return err
		}
		if _, err := sp.Exec(ctx, "UPDATE "+tbl+" SET v = v + "+f.call("40P01", 1)); err != nil {
			return errors.Join(err, sp.Rollback(ctx))
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 2, runs, "the UPDATE ended the first run, and the filter names update")
	assert.Equal(t, int64(1), count(t, a, "SELECT v FROM "+tbl))
}
