package pgxcrl_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/pgxcrl"
)

func TestRunInTxReplaysFirst(t *testing.T) {
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
	assert.Equal(t, 1, runs, "the replays hid the failures from the closure")
	assert.Equal(t, int64(3), f.calls(t))
	assert.Equal(t, int64(1), count(t, a, "SELECT count(*) FROM "+tbl), "the rolled-back runs wrote nothing")
	assert.Equal(t, int32(0), p.Stat().AcquiredConns())
}

func TestRunInTxRerunsTheClosureAfterADivergence(t *testing.T) {
	a := admin(t)
	f := newFault(t, a)
	tbl := table(t, a, "rerun", "v bigint")
	seq := name("seq")
	mustExec(t, a, "CREATE SEQUENCE "+seq)
	t.Cleanup(func() { mustExec(t, a, "DROP SEQUENCE "+seq) })
	obs := &coretest.Observer{}
	p := open(t, "retryExec={40001:3,10ms}", config.WithClock(coretest.NewClock(time.Time{})), config.WithObserver(obs))
	runs := 0
	err := pgxcrl.RunInTx(context.Background(), p, pgx.TxOptions{}, func(tx pgx.Tx) error {
		runs++
		var id int64
		// An answer a replay cannot reproduce: the sequence moved on.
		if err := tx.QueryRow(context.Background(), "SELECT nextval('"+seq+"')").Scan(&id); err != nil {
			return err
		}
		if _, err := tx.Exec(context.Background(), "INSERT INTO "+tbl+" VALUES ($1)", id); err != nil {
			return err
		}
		_, err := tx.Exec(context.Background(), "SELECT "+f.call("40001", 1))
		return err
	})
	require.NoError(t, err)
	assert.Equal(t, 2, runs, "the replay diverged: the closure ran again")
	assert.Equal(t, int64(1), count(t, a, "SELECT count(*) FROM "+tbl))
	assert.Equal(t, int64(3), count(t, a, "SELECT v FROM "+tbl), "the id the second run read")
	var diverged bool
	for _, g := range obs.Snapshot().GiveUps {
		diverged = diverged || errors.Is(g.Reason, core.ErrReplayDiverged)
	}
	assert.True(t, diverged, "the observer saw the divergence")
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

func TestBeginTxReplays(t *testing.T) {
	a := admin(t)
	f := newFault(t, a)
	tbl := table(t, a, "replay", "v int")
	p := open(t, "retryExec={40P01:3,10ms}", config.WithClock(coretest.NewClock(time.Time{})))
	ctx := context.Background()
	tx := begin(t, ctx, p, pgx.TxOptions{})
	_, err := tx.Exec(ctx, "INSERT INTO "+tbl+" VALUES (1)")
	require.NoError(t, err)
	rows, err := tx.Query(ctx, "SELECT v FROM "+tbl)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	require.NoError(t, err)
	assert.Equal(t, []int32{1}, got)
	var v int
	require.NoError(t, tx.QueryRow(ctx, "SELECT "+f.call("40P01", 1)).Scan(&v), "replayed: the caller never knows")
	require.NoError(t, tx.Commit(ctx))
	assert.Equal(t, int64(2), f.calls(t), "the failed statement ran again once")
	assert.Equal(t, int64(1), count(t, a, "SELECT count(*) FROM "+tbl), "the INSERT re-sent on the new transaction, applied once")
	assert.Equal(t, int32(0), p.Stat().AcquiredConns())
}

func TestBeginTxReplayDiverges(t *testing.T) {
	a := admin(t)
	f := newFault(t, a)
	tbl := table(t, a, "diverge", "v bigint")
	p := open(t, "retryExec={40P01:3,10ms}", config.WithClock(coretest.NewClock(time.Time{})))
	ctx := context.Background()
	tx := begin(t, ctx, p, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	var now int64
	require.NoError(t, tx.QueryRow(ctx, "SELECT (extract(epoch from clock_timestamp()) * 1000000)::bigint").Scan(&now))
	_, err := tx.Exec(ctx, "INSERT INTO "+tbl+" VALUES ($1)", now)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "SELECT "+f.call("40P01", 1))
	assert.ErrorIs(t, err, core.ErrReplayDiverged)
	assert.Equal(t, "40P01", sqlState(err), "the original driver error, joined")
	_, err = tx.Exec(ctx, "INSERT INTO "+tbl+" VALUES (2)")
	assert.Error(t, err, "nothing more runs in a transaction whose replay stopped")
	assert.ErrorIs(t, tx.Commit(ctx), pgx.ErrTxCommitRollback)
	assert.Equal(t, int64(1), f.calls(t), "the replay stopped before the failed statement")
	assert.Equal(t, int64(0), count(t, a, "SELECT count(*) FROM "+tbl), "no partial or duplicated write")
	assert.Equal(t, int32(0), p.Stat().AcquiredConns())
}

func TestBeginTxWithoutRetryIsNotReplayed(t *testing.T) {
	a := admin(t)
	f := newFault(t, a)
	p := open(t, "retryExec={40P01:3,10ms}", config.WithClock(coretest.NewClock(time.Time{})))
	ctx := crl.WithoutRetry(context.Background())
	tx := begin(t, ctx, p, pgx.TxOptions{})
	_, err := tx.Exec(ctx, "SELECT "+f.call("40P01", 1))
	assert.Equal(t, "40P01", sqlState(err))
	assert.Equal(t, int64(1), f.calls(t))
	require.NoError(t, tx.Rollback(ctx))
	assert.True(t, errors.Is(tx.Rollback(ctx), pgx.ErrTxClosed))
	assert.Equal(t, int32(0), p.Stat().AcquiredConns())
}

func TestBeginTxRealDeadlockReplayed(t *testing.T) {
	ctx := context.Background()
	a := admin(t)
	tbl := table(t, a, "txdeadlock", "id int PRIMARY KEY, v int")
	mustExec(t, a, "INSERT INTO "+tbl+" VALUES (1, 0), (2, 0)")
	seq := name("seq")
	mustExec(t, a, "CREATE SEQUENCE "+seq)
	t.Cleanup(func() { mustExec(t, a, "DROP SEQUENCE "+seq) })
	// The pool's session looks for a deadlock 1 s after it began to wait,
	// when the holder waits too (the holder would look after 10 s): its
	// transaction is the victim. The replay waits (real clock) for the
	// holder to take row 2 and commit.
	p := open(t, "deadlock_timeout=1s", config.WithRetryExec("{40P01:3,200ms}"))
	htx := holdRow1(t, ctx, tbl)

	tx := begin(t, ctx, p, pgx.TxOptions{})
	tag, err := tx.Exec(ctx, "UPDATE "+tbl+" SET v = v + 1 WHERE id = 2 AND nextval('"+seq+"') > 0")
	require.NoError(t, err)
	assert.Equal(t, int64(1), tag.RowsAffected())
	done := make(chan error, 1)
	go func() {
		_, err := tx.Exec(ctx, "UPDATE "+tbl+" SET v = v + 1 WHERE id = 1")
		done <- err
	}()
	waitFor(t, a, "SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND strpos(query, $1) > 0", "v + 1 WHERE id = 1")
	_, err = htx.Exec(ctx, "UPDATE "+tbl+" SET v = v + 10 WHERE id = 2")
	require.NoError(t, err, "the holder goes on once the victim rolled back")
	require.NoError(t, htx.Commit(ctx))
	require.NoError(t, <-done, "replayed: the caller never knows")
	require.NoError(t, tx.Commit(ctx))
	assert.Equal(t, int64(2), count(t, a, "SELECT last_value FROM "+seq), "the first UPDATE was re-sent once")
	assert.Equal(t, int64(2), count(t, a, "SELECT count(*) FROM "+tbl+" WHERE v = 11"), "each session's work applied once")
}

func TestBeginTxReplaySettings(t *testing.T) {
	a := admin(t)
	for _, tc := range []struct{ name, params string }{
		{"off", "retryExec={40P01:3,10ms}&txReplay=off"},
		{"past the limit", "retryExec={40P01:3,10ms}&txReplayLimit=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFault(t, a)
			tbl := table(t, a, "replayset", "v int")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			p := open(t, tc.params, config.WithClock(coretest.NewClock(time.Time{})))
			tx := begin(t, ctx, p, pgx.TxOptions{})
			_, err := tx.Exec(ctx, "INSERT INTO "+tbl+" VALUES (1)")
			require.NoError(t, err)
			_, err = tx.Exec(ctx, "INSERT INTO "+tbl+" VALUES (2)")
			require.NoError(t, err)
			_, err = tx.Exec(ctx, "SELECT "+f.call("40P01", 1))
			require.Error(t, err)
			assert.Equal(t, "40P01", sqlState(err), "the driver's own error")
			assert.NotErrorIs(t, err, core.ErrReplayDiverged, "no replay ran")
			require.NoError(t, tx.Rollback(ctx))
			assert.Equal(t, int64(1), f.calls(t), "the failed statement ran once")
			assert.Equal(t, int64(0), count(t, a, "SELECT count(*) FROM "+tbl), "nothing of the transaction stays")
		})
	}
}
