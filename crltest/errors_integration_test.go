package crltest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/crltest"
)

// server opens a plain pool (no crl) on the server an environment
// variable names, or skips the test, and creates a table of its own with
// rows 1 and 2; it returns the pool and the table's name.
func server(t *testing.T, env, driverName string) (*sql.DB, string) {
	t.Helper()
	dsn := os.Getenv(env)
	if dsn == "" {
		t.Skip(env + " is not set")
	}
	db, err := sql.Open(driverName, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	table := fmt.Sprintf("crltest_errors_%d", rand.Uint32())
	_, err = db.Exec("CREATE TABLE " + table + " (id INT PRIMARY KEY, n INT NOT NULL)")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE " + table) })
	_, err = db.Exec("INSERT INTO " + table + " (id, n) VALUES (1, 0), (2, 0)")
	require.NoError(t, err)
	return db, table
}

// deadlock makes two transactions of db lock rows 1 and 2 of table in
// opposite orders, each statement run by exec, and returns the victim's
// error. setup runs first on each connection.
func deadlock(t *testing.T, db *sql.DB, table, setup string, exec func(*sql.Conn, string) error) error {
	t.Helper()
	ctx := context.Background()
	var conns [2]*sql.Conn
	for i := range conns {
		c, err := db.Conn(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		if setup != "" {
			_, err = c.ExecContext(ctx, setup)
			require.NoError(t, err)
		}
		_, err = c.ExecContext(ctx, "BEGIN")
		require.NoError(t, err)
		conns[i] = c
	}
	update := func(id int) string { return fmt.Sprintf("UPDATE %s SET n = n + 1 WHERE id = %d", table, id) }
	require.NoError(t, exec(conns[0], update(1)))
	require.NoError(t, exec(conns[1], update(2)))
	second := make(chan error, 1)
	go func() { second <- exec(conns[0], update(2)) }() // waits for conns[1]
	time.Sleep(50 * time.Millisecond)                   // let it wait: the deadlock needs both waiting
	errs := []error{exec(conns[1], update(1)), <-second}
	for _, c := range conns {
		_, _ = c.ExecContext(ctx, "ROLLBACK")
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	t.Fatal("no deadlock")
	return nil
}

func execOn(c *sql.Conn, q string) error {
	_, err := c.ExecContext(context.Background(), q)
	return err
}

// The MySQL family's errors read as MariaDB sends them (1290 and 1040
// cannot be provoked without disturbing the server for others).
func TestMariaDBErrorsReadAsTheServerSendsThem(t *testing.T) {
	db, table := server(t, "CRL_MYSQL_DSN", "mysql")
	ctx := context.Background()
	check := func(name string, got error, injected error) {
		t.Helper()
		var sent *mysql.MySQLError
		require.True(t, errors.As(got, &sent), "%s: %v", name, got)
		assert.Equal(t, sent, injected, name)
	}

	check("deadlock", deadlock(t, db, table, "", execOn), crltest.Deadlock("mariadb"))

	holder, err := db.Conn(ctx)
	require.NoError(t, err)
	defer holder.Close()
	require.NoError(t, execOn(holder, "BEGIN"))
	require.NoError(t, execOn(holder, "UPDATE "+table+" SET n = 1 WHERE id = 1"))
	waiter, err := db.Conn(ctx)
	require.NoError(t, err)
	defer waiter.Close()
	require.NoError(t, execOn(waiter, "SET SESSION innodb_lock_wait_timeout = 0"))
	check("lock timeout", execOn(waiter, "UPDATE "+table+" SET n = 2 WHERE id = 1"), crltest.LockTimeout("mariadb"))
	require.NoError(t, execOn(holder, "ROLLBACK"))

	require.NoError(t, execOn(waiter, "SET SESSION max_statement_time = 0.01"))
	check("cutoff", execOn(waiter, "SELECT SLEEP(1)"), crltest.Cutoff("mariadb"))
}

// digits are the process and transaction numbers of a PostgreSQL detail.
var digits = regexp.MustCompile(`[0-9]+`)

// The PostgreSQL errors read as PostgreSQL sends them (53300 cannot be
// provoked without disturbing the server for others), their process and
// transaction numbers aside.
func TestPostgresErrorsReadAsTheServerSendsThem(t *testing.T) {
	db, table := server(t, "CRL_POSTGRES_DSN", "pgx")
	ctx := context.Background()
	check := func(name string, got error, injected error) {
		t.Helper()
		var sent, in *pgconn.PgError
		require.True(t, errors.As(got, &sent), "%s: %v", name, got)
		require.True(t, errors.As(injected, &in))
		// The fields of every pgx version; Line, Where and Position say where
		// the server and the statement were, not what the error is.
		fields := func(e *pgconn.PgError) []string {
			return []string{e.Severity, e.Code, e.Message, digits.ReplaceAllString(e.Detail, "N"), e.Hint,
				e.SchemaName, e.TableName, e.ColumnName, e.DataTypeName, e.ConstraintName, e.File, e.Routine}
		}
		assert.Equal(t, fields(sent), fields(in), name)
	}

	check("deadlock", deadlock(t, db, table, "SET deadlock_timeout = '10ms'", execOn), crltest.Deadlock("postgres"))

	holder, err := db.Conn(ctx)
	require.NoError(t, err)
	defer holder.Close()
	require.NoError(t, execOn(holder, "BEGIN"))
	require.NoError(t, execOn(holder, "UPDATE "+table+" SET n = 1 WHERE id = 1"))
	waiter, err := db.Conn(ctx)
	require.NoError(t, err)
	defer waiter.Close()
	require.NoError(t, execOn(waiter, "SET lock_timeout = '10ms'"))
	check("lock timeout", execOn(waiter, "UPDATE "+table+" SET n = 2 WHERE id = 1"), crltest.LockTimeout("postgres"))
	require.NoError(t, execOn(holder, "ROLLBACK"))
	require.NoError(t, execOn(waiter, "SET lock_timeout = 0"))

	require.NoError(t, execOn(waiter, "BEGIN READ ONLY"))
	check("failover", execOn(waiter, "INSERT INTO "+table+" (id, n) VALUES (3, 0)"), crltest.Failover("postgres"))
	require.NoError(t, execOn(waiter, "ROLLBACK"))

	require.NoError(t, execOn(waiter, "SET statement_timeout = '10ms'"))
	check("cutoff", execOn(waiter, "SELECT pg_sleep(1)"), crltest.Cutoff("postgres"))
	require.NoError(t, execOn(waiter, "SET statement_timeout = 0"))

	check("serialization", writeSkew(t, db, table), crltest.Serialization("postgres"))
}

// writeSkew runs two serializable transactions of db that each read what
// the other writes, and returns the error of the second COMMIT.
func writeSkew(t *testing.T, db *sql.DB, table string) error {
	t.Helper()
	ctx := context.Background()
	opts := &sql.TxOptions{Isolation: sql.LevelSerializable}
	a, err := db.BeginTx(ctx, opts)
	require.NoError(t, err)
	defer func() { _ = a.Rollback() }()
	b, err := db.BeginTx(ctx, opts)
	require.NoError(t, err)
	defer func() { _ = b.Rollback() }()
	var n int
	require.NoError(t, a.QueryRowContext(ctx, "SELECT n FROM "+table+" WHERE id = 1").Scan(&n))
	require.NoError(t, b.QueryRowContext(ctx, "SELECT n FROM "+table+" WHERE id = 2").Scan(&n))
	_, err = a.ExecContext(ctx, "UPDATE "+table+" SET n = n + 1 WHERE id = 2")
	require.NoError(t, err)
	_, err = b.ExecContext(ctx, "UPDATE "+table+" SET n = n + 1 WHERE id = 1")
	require.NoError(t, err)
	require.NoError(t, a.Commit())
	return b.Commit()
}
