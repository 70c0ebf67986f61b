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
)

// TestQueryTimeoutBoundsStatementsRunOnce: a positive queryTimeout bounds
// every statement, not only the statement loop's attempts: a statement
// of a transaction (Exec, Query, QueryRow), a batch (of the pool, of a
// Conn, of a transaction) and a statement run in a unit of crl.Retry end with context.DeadlineExceeded once they have run for the
// queryTimeout, while the caller's context is alive. A transaction's
// rows that are read in time are not cut off.
func TestQueryTimeoutBoundsStatementsRunOnce(t *testing.T) {
	const sleep = "SELECT pg_sleep(30)"
	p := open(t, "queryTimeout=200ms")
	inTx := func(run func(ctx context.Context, tx pgx.Tx) error) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			tx, err := p.Begin(ctx)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback(context.Background()) }()
			return run(ctx, tx)
		}
	}
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"a transaction's Exec", inTx(func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, sleep)
			return err
		})},
		{"a transaction's Query", inTx(func(ctx context.Context, tx pgx.Tx) error {
			rows, err := tx.Query(ctx, sleep)
			if err == nil {
				rows.Close()
				err = rows.Err()
			}
			return err
		})},
		{"a transaction's QueryRow", inTx(func(ctx context.Context, tx pgx.Tx) error {
			var v any
			return tx.QueryRow(ctx, sleep).Scan(&v)
		})},
		{"a transaction's batch", inTx(func(ctx context.Context, tx pgx.Tx) error {
			return sendBatch(ctx, tx, sleep)
		})},
		{"the pool's batch", func(ctx context.Context) error {
			return sendBatch(ctx, p, sleep)
		}},
		{"a Conn's batch", func(ctx context.Context) error {
			c, err := p.Acquire(ctx)
			require.NoError(t, err)
			defer c.Release()
			return sendBatch(ctx, c, sleep)
		}},
		{"a unit's Exec", func(ctx context.Context) error {
			return crl.Retry(ctx, func(ctx context.Context) error {
				_, err := p.Exec(ctx, sleep)
				return err
			})
		}},
		{"a unit's QueryRow", func(ctx context.Context) error {
			return crl.Retry(ctx, func(ctx context.Context) error {
				var v any
				return p.QueryRow(ctx, sleep).Scan(&v)
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			err := tc.run(ctx)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.NoError(t, ctx.Err(), "the caller's context is alive: the queryTimeout ended the statement")
			assert.Less(t, time.Since(start), 10*time.Second)
		})
	}
	t.Run("in time", func(t *testing.T) {
		ctx := context.Background()
		tx := begin(t, ctx, p, pgx.TxOptions{})
		rows, err := tx.Query(ctx, "SELECT generate_series(1, 3)")
		require.NoError(t, err)
		var got []int32
		for rows.Next() {
			time.Sleep(100 * time.Millisecond) // 300 ms in all: the rows outlive the statement's call
			var n int32
			require.NoError(t, rows.Scan(&n))
			got = append(got, n)
		}
		require.NoError(t, rows.Err())
		assert.Equal(t, []int32{1, 2, 3}, got)
		require.NoError(t, tx.Commit(ctx))
		assert.Equal(t, int32(0), p.Stat().AcquiredConns())
	})
}

// sendBatch sends a batch of the one statement sql on b and reads its
// result: the first error.
func sendBatch(ctx context.Context, b interface {
	SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
}, sql string) error {
	batch := &pgx.Batch{}
	batch.Queue(sql)
	res := b.SendBatch(ctx, batch)
	_, err := res.Exec()
	return errors.Join(err, res.Close())
}
