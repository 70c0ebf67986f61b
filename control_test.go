package crl_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/internal/testsupport/beginspy"
	"github.com/crl-go/crl/mssqltest"
)

// opsObserver records the events, and the operations' starts and ends.
type opsObserver struct {
	coretest.Observer
	mu    sync.Mutex
	ops   []core.Kind
	ended []core.OperationEnded
}

func (o *opsObserver) Operation(k core.Kind) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ops = append(o.ops, k)
}

func (o *opsObserver) OperationEnded(e core.OperationEnded) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ended = append(o.ended, e)
}

// statements returns the statement and transaction operations recorded
// (the pool's connections left out) and their ends.
func (o *opsObserver) statements() (ops []core.Kind, ended []core.OperationEnded) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, k := range o.ops {
		if k != core.KindConnection {
			ops = append(ops, k)
		}
	}
	for _, e := range o.ended {
		if e.Kind != core.KindConnection {
			ended = append(ended, e)
		}
	}
	return ops, ended
}

// requireDriverDeadlock requires err to be go-mssqldb's own error value,
// unwrapped: what the driver returned, number 1205.
func requireDriverDeadlock(t *testing.T, err error) {
	t.Helper()
	me, ok := err.(mssql.Error)
	require.True(t, ok, "the driver's own value, got %T: %v", err, err)
	require.Equal(t, int32(1205), me.Number)
}

// Every statement kind run with a context under WithoutRetry runs once,
// and the caller gets the driver's error value itself; the pool's rules
// retry the same statement run with any other context. The statement is
// still an operation the observer sees start and end (with that error),
// and no retry or give-up is reported.
func TestWithoutRetryRunsEachStatementKindOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		query string
		reply mssqltest.Reply
		run   func(ctx context.Context, db *sql.DB, q string) error
	}{
		{"Exec", update, mssqltest.Affected(1), func(ctx context.Context, db *sql.DB, q string) error {
			_, err := db.ExecContext(ctx, q)
			return err
		}},
		{"Query", read, mssqltest.Rows([]string{"balance"}, []any{int64(90)}), func(ctx context.Context, db *sql.DB, q string) error {
			rows, err := db.QueryContext(ctx, q)
			if err != nil {
				return err
			}
			return rows.Close()
		}},
		{"QueryRow", read, mssqltest.Rows([]string{"balance"}, []any{int64(90)}), func(ctx context.Context, db *sql.DB, q string) error {
			var b int64
			return db.QueryRowContext(ctx, q).Scan(&b)
		}},
		{"Prepare", update, mssqltest.Affected(1), func(ctx context.Context, db *sql.DB, q string) error {
			st, err := db.PrepareContext(ctx, q)
			if err != nil {
				return err
			}
			defer st.Close()
			_, err = st.ExecContext(ctx)
			return err
		}},
		{"Conn", update, mssqltest.Affected(1), func(ctx context.Context, db *sql.DB, q string) error {
			c, err := db.Conn(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			_, err = c.ExecContext(ctx, q)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mssqltest.NewServer(t)
			obs := &opsObserver{}
			db, clock := open(t, srv, "&retryExec={1205:3,1}", config.WithObserver(obs))
			srv.Handle(tc.query, mssqltest.Error(1205), tc.reply)
			type key struct{}
			ctx := context.WithValue(crl.WithoutRetry(context.Background()), key{}, "derived")

			requireDriverDeadlock(t, tc.run(ctx, db, tc.query))
			assert.Equal(t, 1, srv.Count(tc.query), "executions")
			assert.Empty(t, clock.Sleeps(), "waits")
			ops, ended := obs.statements()
			assert.Equal(t, []core.Kind{core.KindStatement}, ops, "operations")
			require.Len(t, ended, 1, "ends")
			requireDriverDeadlock(t, ended[0].Err)
			assert.Equal(t, coretest.Events{}, obs.Snapshot(), "no retry, no give-up")

			srv.Handle(tc.query, mssqltest.Error(1205), tc.reply)
			require.NoError(t, tc.run(context.Background(), db, tc.query), "the same statement, retried")
			assert.Equal(t, 3, srv.Count(tc.query), "executions")
		})
	}
}

// A query under WithoutRetry whose error comes after its first row is not
// reported as a retryable error that could not be retried: no rule
// applies to it.
func TestWithoutRetryReportsNoErrorAfterTheFirstRow(t *testing.T) {
	srv := mssqltest.NewServer(t)
	obs := &opsObserver{}
	db, _ := open(t, srv, "&retryExec={1205:3,1}", config.WithObserver(obs))
	srv.Handle(read, mssqltest.RowsThenError(1205, []string{"balance"}, []any{int64(90)}))
	query := func(ctx context.Context) error {
		rows, err := db.QueryContext(ctx, read)
		require.NoError(t, err)
		for rows.Next() {
		}
		err = rows.Err()
		require.NoError(t, rows.Close())
		return err
	}
	requireDriverDeadlock(t, query(crl.WithoutRetry(context.Background())))
	assert.Empty(t, obs.Snapshot().GiveUps, "give-ups")

	requireDriverDeadlock(t, query(context.Background()))
	giveUps := obs.Snapshot().GiveUps
	require.Len(t, giveUps, 1, "the same error with retries on")
	assert.Equal(t, core.ErrAfterFirstRow, giveUps[0].Reason)
}

// RunInTx, Retry and a plain transaction given a context under
// WithoutRetry run once: the unit is not re-run, and the caller gets the
// driver's error value itself.
func TestWithoutRetryRunsAUnitOnce(t *testing.T) {
	ctx := crl.WithoutRetry(context.Background())
	for _, tc := range []struct {
		name string
		run  func(db *sql.DB, runs *int) error
	}{
		{"RunInTx", func(db *sql.DB, runs *int) error {
			return crl.RunInTx(ctx, db, nil, func(tx *sql.Tx) error {
				*runs++
				_, err := tx.ExecContext(ctx, update)
				return err
			})
		}},
		{"Retry", func(db *sql.DB, runs *int) error {
			return crl.Retry(ctx, func(ctx context.Context) error {
				*runs++
				_, err := db.ExecContext(ctx, update)
				return err
			})
		}},
		{"Retry around a transaction", func(db *sql.DB, runs *int) error {
			return crl.Retry(ctx, func(ctx context.Context) error {
				*runs++
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, update); err != nil {
					_ = tx.Rollback() // SQL Server already rolled the victim's transaction back
					return err
				}
				return tx.Commit()
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mssqltest.NewServer(t)
			obs := &opsObserver{}
			db, clock := open(t, srv, "&retryExec={1205:3,1}", config.WithObserver(obs))
			srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
			runs := 0
			err := tc.run(db, &runs)
			var me mssql.Error
			require.ErrorAs(t, err, &me)
			assert.Equal(t, int32(1205), me.Number)
			if tc.name != "RunInTx" { // RunInTx joins the failed ROLLBACK (3903) to fn's error, as with retries on
				requireDriverDeadlock(t, err)
			}
			assert.Equal(t, 1, runs, "runs")
			assert.Equal(t, 1, srv.Count(update), "executions")
			assert.Empty(t, clock.Sleeps(), "waits")
			assert.Equal(t, coretest.Events{}, obs.Snapshot(), "no retry, no give-up")

			runs = 0
			require.NoError(t, tc.run(db, &runs), "the unit's statement succeeds the second time")
			assert.Equal(t, 1, runs, "runs")
		})
	}
}

func TestWithoutRetryOfWithoutRetryIsTheSameContext(t *testing.T) {
	ctx := crl.WithoutRetry(context.Background())
	assert.Equal(t, ctx, crl.WithoutRetry(ctx))
}

// attemptObserver notes crl.Attempt of each event's context as the event
// arrives (the unit's count moves on with its runs).
type attemptObserver struct {
	core.NopObserver
	mu     sync.Mutex
	events []string
}

func (o *attemptObserver) note(ctx context.Context, what string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, fmt.Sprintf("%s %d", what, crl.Attempt(ctx)))
}

func (o *attemptObserver) RetryScheduled(e core.RetryScheduled) { o.note(e.Context, "retry") }
func (o *attemptObserver) Succeeded(e core.Succeeded)           { o.note(e.Context, "succeeded") }
func (o *attemptObserver) GaveUp(e core.GaveUp)                 { o.note(e.Context, "gave up") }

func (o *attemptObserver) seen() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.events...)
}

// Attempt says 1, then 2, inside a unit that crl re-runs after a
// deadlock: on Retry's context, and on the context RunInTx begins its
// transaction with (the closure reads it through an enclosing Retry).
// Outside a unit it is 0, and so under WithoutRetry.
func TestAttempt(t *testing.T) {
	background := context.Background()
	assert.Zero(t, crl.Attempt(background), "outside a unit")
	assert.Zero(t, crl.Attempt(crl.WithoutRetry(background)), "without retries")

	t.Run("Retry", func(t *testing.T) {
		srv := mssqltest.NewServer(t)
		obs := &attemptObserver{}
		db, _ := open(t, srv, "&retryExec={1205:3,1}", config.WithObserver(obs))
		srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
		var seen []int
		require.NoError(t, crl.Retry(background, func(ctx context.Context) error {
			seen = append(seen, crl.Attempt(ctx))
			_, err := db.ExecContext(ctx, update)
			return err
		}))
		assert.Equal(t, []int{1, 2}, seen)
		assert.Equal(t, []string{"retry 1", "succeeded 2"}, obs.seen(), "the loop's events")
		assert.Zero(t, crl.Attempt(background), "after the unit")
	})
	t.Run("RunInTx", func(t *testing.T) {
		srv := mssqltest.NewServer(t)
		c, err := mssql.NewConnector(srv.DSN())
		require.NoError(t, err)
		var seen []int
		spy := beginspy.New(c, func(ctx context.Context) { seen = append(seen, crl.Attempt(ctx)) })
		obs := &attemptObserver{}
		db, err := crl.OpenDB(spy, "sqlserver", crl.WithRetryExec("{1205:3,1}"), config.WithTxReplay(false), // the helper's own re-run
			config.WithClock(coretest.NewClock(time.Time{})), config.WithObserver(obs))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, db.Close()) })
		srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
		require.NoError(t, crl.RunInTx(background, db, nil, func(tx *sql.Tx) error {
			_, err := tx.Exec(update)
			return err
		}))
		assert.Equal(t, []int{1, 2}, seen, "crl.Attempt of BeginTx's context")
		// The loop's own events carry the unit: the retry after run 1, the
		// success of run 2.
		assert.Equal(t, []string{"retry 1", "succeeded 2"}, obs.seen())
	})
	t.Run("RunInTx inside Retry", func(t *testing.T) {
		srv := mssqltest.NewServer(t)
		db, _ := open(t, srv, "&retryExec={1205:3,1}&txReplay=off")
		srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
		var seen []int
		require.NoError(t, crl.Retry(background, func(ctx context.Context) error {
			return crl.RunInTx(ctx, db, nil, func(tx *sql.Tx) error {
				seen = append(seen, crl.Attempt(ctx))
				_, err := tx.ExecContext(ctx, update)
				return err
			})
		}))
		assert.Equal(t, []int{1, 2}, seen)
	})
}
