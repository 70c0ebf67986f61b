package sqlxcrl_test

import (
	"context"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/internal/testsupport/beginspy"
	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

// spiedDB opens a DB over the stand-in through a connector that notes
// crl.Attempt of the context of every BeginTx below the driver layer.
func spiedDB(t *testing.T, srv *mssqltest.Server, opts ...sqlxcrl.Option) (*sqlxcrl.DB, *[]int) {
	t.Helper()
	c, err := mssql.NewConnector(srv.DSN())
	require.NoError(t, err)
	var seen []int
	spy := beginspy.New(c, func(ctx context.Context) { seen = append(seen, crl.Attempt(ctx)) })
	opts = append([]sqlxcrl.Option{config.WithClock(coretest.NewClock(time.Time{}))}, opts...)
	db, err := sqlxcrl.OpenDB(spy, "sqlserver", opts...)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, db.Close()) })
	return db, &seen
}

// RunInTxx and (*DB).RunInTx begin each run's transaction with a context
// whose crl.Attempt is the run: 1, then 2 after a deadlock.
func TestRunInTxxAttempt(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(db *sqlxcrl.DB, fn func(exec func(string) error) error) error
	}{
		{"RunInTxx", func(db *sqlxcrl.DB, fn func(exec func(string) error) error) error {
			return sqlxcrl.RunInTxx(context.Background(), db.DB, nil, func(tx *sqlx.Tx) error {
				return fn(func(q string) error { _, err := tx.Exec(q); return err })
			})
		}},
		{"DB.RunInTx", func(db *sqlxcrl.DB, fn func(exec func(string) error) error) error {
			return db.RunInTx(context.Background(), nil, func(tx *sqlxcrl.Tx) error {
				return fn(func(q string) error { _, err := tx.Exec(q); return err })
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mssqltest.NewServer(t)
			db, seen := spiedDB(t, srv, sqlxcrl.WithRetryExec("{1205:3,1}"), config.WithTxReplay(false)) // the helper's own re-run
			srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
			runs := 0
			require.NoError(t, tc.run(db, func(exec func(string) error) error { runs++; return exec(update) }))
			assert.Equal(t, 2, runs, "runs")
			assert.Equal(t, []int{1, 2}, *seen, "crl.Attempt of BeginTx's context")
		})
	}
}

// Given a context under crl.WithoutRetry, RunInTxx and (*DB).RunInTx run
// their closure once, and the caller gets the deadlock.
func TestRunInTxxWithoutRetry(t *testing.T) {
	ctx := crl.WithoutRetry(context.Background())
	for _, tc := range []struct {
		name string
		run  func(db *sqlxcrl.DB, runs *int) error
	}{
		{"RunInTxx", func(db *sqlxcrl.DB, runs *int) error {
			return sqlxcrl.RunInTxx(ctx, db.DB, nil, func(tx *sqlx.Tx) error {
				*runs++
				_, err := tx.ExecContext(ctx, update)
				return err
			})
		}},
		{"DB.RunInTx", func(db *sqlxcrl.DB, runs *int) error {
			return db.RunInTx(ctx, nil, func(tx *sqlxcrl.Tx) error {
				*runs++
				_, err := tx.ExecContext(ctx, update)
				return err
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mssqltest.NewServer(t)
			db, clock := open(t, srv, "&retryExec={1205:3,1}")
			srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
			runs := 0
			mustNumber(t, tc.run(db, &runs), 1205)
			assert.Equal(t, 1, runs, "runs")
			assert.Equal(t, 1, srv.Count(update), "executions")
			assert.Empty(t, clock.Sleeps(), "waits")
		})
	}
}
