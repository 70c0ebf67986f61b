package sqlxcrl_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

// With the circuit breaker open, the statement-running methods of
// sqlxcrl.DB, and RunInTx, are refused (a one-row query's row carries the
// refusal: its Scan returns it, never panics) before
// anything reaches the server
// (issue 9, item 1: the breaker is asked before the first attempt), also
// on the path where sqlxcrl runs a quiet statement's first attempt itself.
// After OpenFor the next statement is the probe; its success closes the
// breaker.
func TestOpenBreakerRefusesBeforeTheServer(t *testing.T) {
	srv := mssqltest.NewServer(t)
	const (
		sel    = "SELECT n FROM t"
		insert = "INSERT INTO ledger (amount) VALUES (10)"
	)
	db, clock := open(t, srv, "&retryExec={1205:1,0}",
		config.WithCircuitBreaker(core.BreakerSettings{Failures: 1, OpenFor: time.Minute}))
	srv.Handle(update, mssqltest.Error(1205), mssqltest.Error(1205), mssqltest.Affected(1))
	srv.Handle(sel, mssqltest.Rows([]string{"n"}, []any{int64(1)}))
	srv.Handle(insert, mssqltest.Affected(1))
	ctx := context.Background()

	// One statement that fails after its retry opens the breaker.
	_, err := db.ExecContext(ctx, update)
	require.ErrorIs(t, err, core.ErrRetriesExhausted)
	require.Equal(t, 2, srv.Count(update))

	refused := map[string]func() error{
		"ExecContext": func() error { _, err := db.ExecContext(ctx, update); return err },
		"QueryContext": func() error {
			rows, err := db.QueryContext(ctx, sel)
			if err == nil {
				_ = rows.Close()
			}
			return err
		},
		"QueryxContext": func() error {
			rows, err := db.QueryxContext(ctx, sel)
			if err == nil {
				_ = rows.Close()
			}
			return err
		},
		"QueryRowContext":  func() error { var n int64; return db.QueryRowContext(ctx, sel).Scan(&n) },
		"QueryRowxContext": func() error { var n int64; return db.QueryRowxContext(ctx, sel).Scan(&n) },
		"QueryRowx Err":    func() error { return db.QueryRowx(sel).Err() },
		"GetContext":       func() error { var n int64; return db.GetContext(ctx, &n, sel) },
		"SelectContext":    func() error { var ns []int64; return db.SelectContext(ctx, &ns, sel) },
		"NamedExecContext": func() error { _, err := db.NamedExecContext(ctx, update, map[string]any{}); return err },
		"RunInTx": func() error {
			return db.RunInTx(ctx, nil, func(tx *sqlxcrl.Tx) error {
				_, err := tx.Exec(insert)
				return err
			})
		},
	}
	for name, run := range refused {
		err := run()
		require.Error(t, err, name)
		assert.ErrorIs(t, err, core.ErrCircuitOpen, name)
	}
	assert.Equal(t, 2, srv.Count(update), "a refused statement reached the server")
	assert.Zero(t, srv.Count(sel), "a refused query reached the server")
	assert.Zero(t, srv.Count(insert), "a refused transaction ran its statement")
	assert.Empty(t, srv.Committed(), "a refused transaction committed")

	// After OpenFor: the probe runs once and closes the breaker.
	clock.Advance(time.Minute)
	_, err = db.ExecContext(ctx, update)
	require.NoError(t, err, "the probe")
	assert.Equal(t, 3, srv.Count(update))
	var n int64
	require.NoError(t, db.GetContext(ctx, &n, sel), "the breaker is closed again")
	assert.Equal(t, int64(1), n)
}
