package crl_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/mssqltest"
)

// onRetry calls f at each RetryScheduled, before the wait: the failover
// finishes while the statement waits.
type onRetry struct {
	core.NopObserver
	f func()
}

func (o onRetry) RetryScheduled(core.RetryScheduled) { o.f() }

// A failover error takes its connection out of the pool, and a statement
// that a rule retries for it runs again on a new connection: a write too,
// since the server refused it before running it. SQL Server's
// availability-group and Azure SQL reconfiguration errors, through
// mssqltest: the retry logs in again.
func TestFailoverRetriesOnANewConnection(t *testing.T) {
	const insert, read = "INSERT INTO t VALUES (1)", "SELECT v FROM t"
	for _, n := range []int32{976, 978, 983, 3906, 40613, 40197} {
		for _, query := range []string{insert, read} {
			t.Run(fmt.Sprint(n, " ", strings.Fields(query)[0]), func(t *testing.T) {
				srv := mssqltest.NewServer(t)
				db, err := crl.Open("sqlserver", srv.DSN(), crl.WithRetryExec("{failover:2,10ms*1}"))
				require.NoError(t, err)
				defer db.Close()
				db.SetMaxOpenConns(1)
				require.NoError(t, db.Ping())
				logins := srv.Logins()
				ok := mssqltest.Affected(1)
				if query == read {
					ok = mssqltest.Rows([]string{"v"}, []any{int64(1)})
				}
				srv.Handle(query, mssqltest.Error(n), ok)
				if query == read {
					var v int64
					require.NoError(t, db.QueryRow(query).Scan(&v))
				} else {
					_, err = db.Exec(query)
					require.NoError(t, err)
				}
				assert.Equal(t, 2, srv.Count(query), "run again once")
				assert.Equal(t, logins+1, srv.Logins(), "on a new connection")
				require.NoError(t, db.Ping())
				assert.Equal(t, logins+1, srv.Logins(), "the new connection stays in the pool; the refused one is gone")
				assert.Equal(t, 1, db.Stats().OpenConnections)
			})
		}
	}
}

// Without a rule that retries it, a failover error is returned as the
// driver's, and its connection still leaves the pool: the next statement
// runs on a new one.
func TestFailoverWithoutARuleLeavesThePool(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, err := crl.Open("sqlserver", srv.DSN(), crl.WithRetryExec(""))
	require.NoError(t, err)
	defer db.Close()
	db.SetMaxOpenConns(1)
	require.NoError(t, db.Ping())
	logins := srv.Logins()
	srv.Handle("UPDATE t SET v = 2", mssqltest.Error(40613), mssqltest.Affected(1))
	_, err = db.Exec("UPDATE t SET v = 2")
	n, ok := core.ErrorNumber(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, int32(40613), n)
	_, err = db.Exec("UPDATE t SET v = 2")
	require.NoError(t, err)
	assert.Equal(t, logins+1, srv.Logins(), "the refused connection was not handed out again")
}

// A connection that Azure drops after a reconfiguration: the outcome of
// a write is unknown, so it never runs again, whatever the rule; a read
// runs again on a new connection.
func TestFailoverDropNeverRerunsAWrite(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, err := crl.Open("sqlserver", srv.DSN(), crl.WithRetryExec("{failover,badconn:2,10ms*1}"))
	require.NoError(t, err)
	defer db.Close()
	db.SetMaxOpenConns(1)
	srv.Handle("UPDATE t SET v = 3", mssqltest.Drop(), mssqltest.Affected(1))
	_, err = db.Exec("UPDATE t SET v = 3")
	require.Error(t, err)
	assert.Equal(t, 1, srv.Count("UPDATE t SET v = 3"), "a write whose connection broke is never re-run")
	srv.Handle("SELECT v FROM t", mssqltest.Drop(), mssqltest.Rows([]string{"v"}, []any{int64(3)}))
	var v int64
	require.NoError(t, db.QueryRow("SELECT v FROM t").Scan(&v))
	assert.Equal(t, 2, srv.Count("SELECT v FROM t"))
}

// MariaDB made read-only (read_only=1, which binds a user without READ
// ONLY ADMIN, as a demoted primary binds the application): a write
// refused with 1290 runs again on a new connection (another
// CONNECTION_ID()) once the server is writable, and is applied once; the
// refused connection is closed on the server.
func TestFailoverReadOnlyMariaDB(t *testing.T) {
	dsn := os.Getenv("CRL_MYSQL_DSN")
	if dsn == "" {
		t.Skip("CRL_MYSQL_DSN not set")
	}
	ctx := context.Background()
	admin, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	// Closed after the cleanup below, which uses it.
	t.Cleanup(func() { assert.NoError(t, admin.Close()) })
	// One session, whose lock_wait_timeout bounds SET GLOBAL read_only.
	admin.SetMaxOpenConns(1)
	const user, table = "crl_classes_ro", "crl_classes_failover"
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	for _, s := range []string{
		"SET SESSION lock_wait_timeout = 5",
		"DROP USER IF EXISTS " + user,
		"CREATE USER " + user + " IDENTIFIED BY 'crl-ro-pw'",
		"DROP TABLE IF EXISTS " + table,
		"CREATE TABLE " + table + " (id INT PRIMARY KEY)",
		"GRANT SELECT, INSERT ON " + cfg.DBName + "." + table + " TO " + user,
	} {
		_, err := admin.ExecContext(ctx, s)
		require.NoError(t, err, s)
	}
	t.Cleanup(func() {
		for _, s := range []string{"SET GLOBAL read_only = 0", "DROP USER IF EXISTS " + user, "DROP TABLE IF EXISTS " + table} {
			_, err := admin.Exec(s)
			assert.NoError(t, err, s)
		}
	})
	ro := cfg.Clone()
	ro.User, ro.Passwd = user, "crl-ro-pw"
	writable := onRetry{f: func() {
		_, err := admin.Exec("SET GLOBAL read_only = 0")
		assert.NoError(t, err)
	}}
	db, err := crl.Open("mysql", ro.FormatDSN(), crl.WithRetryExec("{failover:2,10ms*1}"), config.WithObserver(writable))
	require.NoError(t, err)
	defer db.Close()
	db.SetMaxOpenConns(1)
	var before, after int64
	require.NoError(t, db.QueryRow("SELECT CONNECTION_ID()").Scan(&before))
	_, err = admin.Exec("SET GLOBAL read_only = 1")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO " + table + " VALUES (1)")
	require.NoError(t, err, "refused with 1290, then run on a new connection")
	require.NoError(t, db.QueryRow("SELECT CONNECTION_ID()").Scan(&after))
	assert.NotEqual(t, before, after, "another server session")
	var rows int
	require.NoError(t, admin.QueryRow("SELECT COUNT(*) FROM "+table).Scan(&rows))
	assert.Equal(t, 1, rows, "applied once")
	assert.Eventually(t, func() bool {
		var n int
		return admin.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", before).Scan(&n) == nil && n == 0
	}, 5*time.Second, 20*time.Millisecond, "the refused session is closed")
}

// PostgreSQL: a session made read-only (default_transaction_read_only,
// as after a failover to a standby) refuses a write with 25006; it runs
// again on a new connection (another pg_backend_pid()) and is applied
// once; the refused backend is gone.
func TestFailoverReadOnlyPostgres(t *testing.T) {
	dsn := os.Getenv("CRL_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("CRL_POSTGRES_DSN not set")
	}
	const table = "crl_classes_failover"
	admin, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, admin.Close()) }) // after the cleanup below, which uses it
	for _, s := range []string{"DROP TABLE IF EXISTS " + table, "CREATE TABLE " + table + " (id INT PRIMARY KEY)"} {
		_, err := admin.Exec(s)
		require.NoError(t, err, s)
	}
	t.Cleanup(func() {
		_, err := admin.Exec("DROP TABLE IF EXISTS " + table)
		assert.NoError(t, err)
	})
	db, err := crl.Open("pgx", dsn, crl.WithRetryExec("{failover:2,10ms*1}"))
	require.NoError(t, err)
	defer db.Close()
	db.SetMaxOpenConns(1)
	_, err = db.Exec("SET SESSION default_transaction_read_only = on")
	require.NoError(t, err)
	var before, after int64
	require.NoError(t, db.QueryRow("SELECT pg_backend_pid()").Scan(&before))
	_, err = db.Exec("INSERT INTO " + table + " VALUES (1)")
	require.NoError(t, err, "refused with 25006, then run on a new connection")
	require.NoError(t, db.QueryRow("SELECT pg_backend_pid()").Scan(&after))
	assert.NotEqual(t, before, after, "another backend")
	var rows int
	require.NoError(t, admin.QueryRow("SELECT COUNT(*) FROM "+table).Scan(&rows))
	assert.Equal(t, 1, rows, "applied once")
	assert.Eventually(t, func() bool {
		var n int
		return admin.QueryRow("SELECT COUNT(*) FROM pg_stat_activity WHERE pid = $1", before).Scan(&n) == nil && n == 0
	}, 5*time.Second, 20*time.Millisecond, "the refused backend is gone")
}
