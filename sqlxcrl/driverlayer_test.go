package sqlxcrl_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

// sqlx's own types over a crl pool: statements retried by the driver
// layer, whole transactions by RunInTxx, on *sqlx.DB and *sqlx.Tx.
func TestSqlxOwnTypesOverACrlPool(t *testing.T) {
	srv := mssqltest.NewServer(t)
	pool, err := crl.Open("sqlserver", srv.DSN(), crl.WithRetryExec("{1205:3,0:update}"), config.WithClock(coretest.NewClock(time.Time{})))
	require.NoError(t, err)
	defer pool.Close()
	db := sqlx.NewDb(pool, "sqlserver")

	const get = "SELECT balance FROM accounts WHERE id = @p1"
	srv.Handle(get, mssqltest.Error(1205), mssqltest.Rows([]string{"balance"}, []any{int64(5)}))
	var b int64
	err = db.Get(&b, db.Rebind("SELECT balance FROM accounts WHERE id = ?"), 1)
	require.Error(t, err, "the rule's filter names update only")
	assert.Equal(t, 1, srv.Count(get))

	srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
	runs := 0
	err = sqlxcrl.RunInTxx(context.Background(), db, nil, func(tx *sqlx.Tx) error {
		runs++
		_, err := tx.Exec(update)
		return err
	})
	require.NoError(t, err)
	assert.Equal(t, 1, runs, "the driver layer replayed the transaction: the closure ran once")

	// Over a pool crl did not open, the unit runs once, as without crl.
	plain := sqlx.NewDb(mustOpenPlain(t, srv), "sqlserver")
	srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
	before := srv.Count(update)
	runs = 0
	err = sqlxcrl.RunInTxx(context.Background(), plain, nil, func(tx *sqlx.Tx) error {
		runs++
		_, err := tx.Exec(update)
		return err
	})
	mustNumber(t, err, 1205)
	assert.Equal(t, 1, runs, "runs over a sql.Open pool")
	assert.Equal(t, 1, srv.Count(update)-before, "executions over a sql.Open pool")
}

// sqlx.Connect with a crl.Register name, its bind type told to sqlx.
func TestSqlxConnectWithARegisteredName(t *testing.T) {
	srv := mssqltest.NewServer(t)
	name, err := crl.Register("sqlserver", crl.WithRetryExec("{1205:3,0}"), config.WithClock(coretest.NewClock(time.Time{})))
	require.NoError(t, err)
	sqlx.BindDriver(name, sqlx.BindType("sqlserver"))
	db, err := sqlx.Connect(name, srv.DSN())
	require.NoError(t, err)
	defer db.Close()
	const q = "UPDATE accounts SET balance = @p1 WHERE id = @p2"
	srv.Handle(q, mssqltest.Error(1205), mssqltest.Affected(1))
	_, err = db.Exec(db.Rebind("UPDATE accounts SET balance = ? WHERE id = ?"), 10, 1)
	require.NoError(t, err)
	assert.Equal(t, 2, srv.Count(q))
}

// A *sqlxcrl.DB over a crl pool runs one loop: each attempt counted once.
func TestSqlxcrlOverItsPoolRunsOneLoop(t *testing.T) {
	srv := mssqltest.NewServer(t)
	obs := &coretest.Observer{}
	db, _ := open(t, srv, "&retryExec={1205:2,0}", config.WithObserver(obs))
	srv.Handle(update, mssqltest.Error(1205))
	_, err := db.Exec(update)
	assert.ErrorIs(t, err, core.ErrRetriesExhausted)
	assert.Equal(t, 3, srv.Count(update), "retryCount + 1")
	assert.Len(t, obs.Snapshot().Retries, 2)
	assert.Len(t, obs.Snapshot().GiveUps, 1)
}

func mustOpenPlain(t *testing.T, srv *mssqltest.Server) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlserver", srv.DSN())
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// A closure that commits its own transaction is told so; nothing is
// retried and it is not "COMMIT outcome unknown" (issue 28, item 11).
func TestRunInTxClosureThatCommitsIsToldSo(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={1205:3,0}")
	runs := 0
	err := db.RunInTx(context.Background(), nil, func(tx *sqlxcrl.Tx) error {
		runs++
		return tx.Commit()
	})
	assert.ErrorIs(t, err, crl.ErrClosureEndedTx)
	assert.NotErrorIs(t, err, core.ErrCommitUnknown)
	assert.Equal(t, 1, runs)
}
