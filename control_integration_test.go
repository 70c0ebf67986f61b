package crl_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
)

// deadlockingFunction creates a function on d's server that fails as a
// deadlock victim every time it runs (MariaDB: SIGNAL 1213; PostgreSQL:
// RAISE 40P01), counting its runs in a sequence, which no rollback
// undoes. It returns the statement that calls it and a count of its runs
// since the count was last read; both are dropped when the test ends.
func deadlockingFunction(t *testing.T, d realDB, admin *sql.DB) (call string, runs func() int) {
	t.Helper()
	name := fmt.Sprintf("ctl_%d_%d", os.Getpid(), time.Now().UnixNano()%1_000_000_000)
	var create, drop []string
	switch d.name {
	case "mariadb":
		create = []string{"CREATE SEQUENCE " + name + "_seq",
			"CREATE FUNCTION " + name + "_f() RETURNS INT NOT DETERMINISTIC MODIFIES SQL DATA BEGIN " +
				"IF NEXTVAL(" + name + "_seq) > 0 THEN SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213, " +
				"MESSAGE_TEXT = 'Deadlock found when trying to get lock; try restarting transaction'; END IF; RETURN 1; END"}
		drop = []string{"DROP FUNCTION " + name + "_f", "DROP SEQUENCE " + name + "_seq"}
	default:
		create = []string{"CREATE SEQUENCE " + name + "_seq",
			"CREATE FUNCTION " + name + "_f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN PERFORM nextval('" + name + "_seq'); " +
				"RAISE EXCEPTION 'deadlock detected' USING ERRCODE = 'deadlock_detected'; END $$"}
		drop = []string{"DROP FUNCTION " + name + "_f()", "DROP SEQUENCE " + name + "_seq"}
	}
	for _, q := range create {
		_, err := admin.Exec(q)
		require.NoError(t, err, q)
	}
	t.Cleanup(func() {
		for _, q := range drop {
			_, err := admin.Exec(q)
			assert.NoError(t, err, q)
		}
	})
	next := "SELECT NEXTVAL(" + name + "_seq)"
	if d.name != "mariadb" {
		next = "SELECT nextval('" + name + "_seq')"
	}
	counted, last := 0, 0 // the sequence's values the count itself took; the runs counted before
	return "SELECT " + name + "_f()", func() int {
		var n int
		require.NoError(t, admin.QueryRow(next).Scan(&n))
		counted++
		total := n - counted
		defer func() { last = total }()
		return total - last
	}
}

// requireOwnDeadlock requires err to be the driver's own deadlock error
// value, unwrapped: *mysql.MySQLError 1213 or *pgconn.PgError 40P01.
func requireOwnDeadlock(t *testing.T, d realDB, err error) {
	t.Helper()
	switch e := err.(type) {
	case *gomysql.MySQLError:
		require.Equal(t, "mariadb", d.name, "%v", err)
		require.EqualValues(t, 1213, e.Number)
	case *pgconn.PgError:
		require.Equal(t, "postgres", d.name, "%v", err)
		require.Equal(t, "40P01", e.Code)
	default:
		require.Failf(t, "not the driver's own error value", "%T: %v", err, err)
	}
}

// On real MariaDB and PostgreSQL servers, an autocommit statement, a
// transaction (RunInTx) and a Retry unit given a context under
// WithoutRetry run once, counted on the server, and the caller gets the
// driver's own error value; the same autocommit statement run with
// another context is retried by the pool's rule.
func TestWithoutRetryOnRealServers(t *testing.T) {
	for _, d := range realDBs {
		t.Run(d.name, func(t *testing.T) {
			dsn, admin := d.admin(t)
			db, err := crl.Open(d.driver, dsn, crl.WithRetryExec(d.rules))
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, db.Close()) })
			call, runs := deadlockingFunction(t, d, admin)
			ctx := crl.WithoutRetry(context.Background())

			_, err = db.ExecContext(ctx, call)
			requireOwnDeadlock(t, d, err)
			assert.Equal(t, 1, runs(), "autocommit statement: runs")

			units := 0
			err = crl.RunInTx(ctx, db, nil, func(tx *sql.Tx) error {
				units++
				_, err := tx.ExecContext(ctx, call)
				return err
			})
			requireOwnDeadlock(t, d, err)
			assert.Equal(t, 1, units, "RunInTx: runs of fn")
			assert.Equal(t, 1, runs(), "RunInTx: runs")

			units = 0
			err = crl.Retry(ctx, func(ctx context.Context) error {
				units++
				_, err := db.ExecContext(ctx, call)
				return err
			})
			requireOwnDeadlock(t, d, err)
			assert.Equal(t, 1, units, "Retry: runs of fn")
			assert.Equal(t, 1, runs(), "Retry: runs")

			_, err = db.ExecContext(context.Background(), call)
			require.Error(t, err)
			assert.Equal(t, 3, runs(), "with retries: 1 + the rule's 2")
		})
	}
}
