package crl_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/mssqltest"
)

// TestQueryTimeoutBoundsStatementsRunOnce: a positive queryTimeout bounds
// every statement, as the JDBC driver's does, not only the statement
// loop's attempts: a statement of a transaction (Exec, Query, a prepared
// statement's), one run in a unit of crl.Retry, and one run under
// crl.WithoutRetry end with context.DeadlineExceeded once it has run for
// the queryTimeout, while the caller's context is alive. A statement
// that answers in time is not cut off, nor are its rows while they are
// read.
func TestQueryTimeoutBoundsStatementsRunOnce(t *testing.T) {
	const hang = "WAITFOR DELAY '01:00:00'"
	srv := mssqltest.NewServer(t)
	srv.Handle(hang, mssqltest.Hang())
	srv.Handle(read, mssqltest.Rows([]string{"balance"}, []any{int64(90)}, []any{int64(80)}))
	db, _ := open(t, srv, "&queryTimeout=100ms&retryExec=")
	inTx := func(run func(ctx context.Context, tx *sql.Tx) error) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			tx, err := db.BeginTx(ctx, nil)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback() }()
			return run(ctx, tx)
		}
	}
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"a transaction's Exec", inTx(func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, hang)
			return err
		})},
		{"a transaction's Query", inTx(func(ctx context.Context, tx *sql.Tx) error {
			return readAll(tx.QueryContext(ctx, hang))
		})},
		{"a transaction's prepared Exec", inTx(func(ctx context.Context, tx *sql.Tx) error {
			s, err := tx.PrepareContext(ctx, hang)
			require.NoError(t, err)
			defer s.Close()
			_, err = s.ExecContext(ctx)
			return err
		})},
		{"a transaction's prepared Query", inTx(func(ctx context.Context, tx *sql.Tx) error {
			s, err := tx.PrepareContext(ctx, hang)
			require.NoError(t, err)
			defer s.Close()
			return readAll(s.QueryContext(ctx))
		})},
		{"a unit's Exec", func(ctx context.Context) error {
			return crl.Retry(ctx, func(ctx context.Context) error {
				_, err := db.ExecContext(ctx, hang)
				return err
			})
		}},
		{"Exec under WithoutRetry", func(ctx context.Context) error {
			_, err := db.ExecContext(crl.WithoutRetry(ctx), hang)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
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
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		rows, err := tx.QueryContext(ctx, read)
		require.NoError(t, err)
		var got []int64
		for rows.Next() {
			time.Sleep(60 * time.Millisecond) // 120 ms in all: the rows outlive the statement's call
			var n int64
			require.NoError(t, rows.Scan(&n))
			got = append(got, n)
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
		assert.Equal(t, []int64{90, 80}, got)
		require.NoError(t, tx.Commit())
	})
}

// readAll reads rows to the end and closes them, and returns the first
// error.
func readAll(rows *sql.Rows, err error) error {
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		_ = rows.Close()
		return err
	}
	return rows.Close()
}
