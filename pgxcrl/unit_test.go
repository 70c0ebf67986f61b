package pgxcrl_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/pgxcrl"
)

// crl.Retry sees a pgxcrl pool as it sees a pool crl opened for
// database/sql: the statements fn runs with its context run once, their
// outcome recorded in the unit, and the unit runs again whole, under the
// pool's rules, when one of them failed with an error the rules retry;
// crl.Attempt reads the run. Every way of running a statement is a case:
// the pool's Exec, Query and QueryRow, a Conn's Exec, a transaction
// begun in the unit (its failure after the replay it tried), and
// pgxcrl.RunInTx inside the unit (run once: the unit is what is retried).
func TestRetryRerunsAUnitOnAPgxcrlPool(t *testing.T) {
	a := admin(t)
	p := open(t, "retryExec={40P01:3,10ms}&txReplay=off", config.WithClock(coretest.NewClock(time.Time{})))
	for _, c := range []struct {
		name string
		run  func(ctx context.Context, sql string) error
	}{
		{"Exec", func(ctx context.Context, sql string) error { _, err := p.Exec(ctx, sql); return err }},
		{"QueryRow", func(ctx context.Context, sql string) error { var v int; return p.QueryRow(ctx, sql).Scan(&v) }},
		{"Query", func(ctx context.Context, sql string) error {
			rows, err := p.Query(ctx, sql)
			if err != nil {
				return err
			}
			rows.Close()
			return rows.Err()
		}},
		{"Conn", func(ctx context.Context, sql string) error {
			c, err := p.Acquire(ctx)
			if err != nil {
				return err
			}
			defer c.Release()
			_, err = c.Exec(ctx, sql)
			return err
		}},
		{"transaction", func(ctx context.Context, sql string) error {
			tx, err := p.Begin(ctx)
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback(ctx) }()
			if _, err := tx.Exec(ctx, sql); err != nil {
				return err
			}
			return tx.Commit(ctx)
		}},
		{"RunInTx", func(ctx context.Context, sql string) error {
			return pgxcrl.RunInTx(ctx, p, pgx.TxOptions{}, func(tx pgx.Tx) error { _, err := tx.Exec(ctx, sql); return err })
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFault(t, a)
			var attempts []int
			err := crl.Retry(context.Background(), func(ctx context.Context) error {
				attempts = append(attempts, crl.Attempt(ctx))
				return c.run(ctx, "SELECT "+f.call("40P01", 2))
			})
			require.NoError(t, err)
			assert.Equal(t, []int{1, 2, 3}, attempts, "the unit ran again whole, twice")
			assert.Equal(t, int64(3), f.calls(t), "each statement ran once per run of the unit")
			assert.Equal(t, int32(0), p.Stat().AcquiredConns())
		})
	}
}
