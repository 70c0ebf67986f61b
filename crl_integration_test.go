package crl_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/crltest"
	"github.com/crl-go/crl/internal/testsupport/resetproxy"
	"github.com/crl-go/crl/mssqltest"
)

// A reset storm through go-sql-driver/mysql's own connector: every login
// is reset. The JDBC algorithm makes 2 logins (the first, and the login
// loop's one retry; the connection loop does not retry a network failure
// that retryConn does not name); the loop's error must not match
// driver.ErrBadConn, or database/sql would run the whole loop again (6).
func TestResetStormMakesTheJDBCLoginCount(t *testing.T) {
	dsn := os.Getenv("CRL_MYSQL_DSN")
	if dsn == "" {
		t.Skip("CRL_MYSQL_DSN not set")
	}
	cfg, err := gomysql.ParseDSN(dsn)
	require.NoError(t, err)
	proxy, err := resetproxy.Start(cfg.Addr, nil)
	require.NoError(t, err)
	defer proxy.Close()
	proxy.Reset(1000)
	c := cfg.Clone()
	c.Net, c.Addr = "tcp", proxy.Addr()
	conn, err := gomysql.NewConnector(c)
	require.NoError(t, err)
	db, err := crl.OpenDB(conn, "mysql")
	require.NoError(t, err)
	defer db.Close()
	err = db.Ping()
	require.Error(t, err)
	assert.NotErrorIs(t, err, driver.ErrBadConn)
	assert.True(t, core.IsBadConn(err) || strings.Contains(err.Error(), "bad connection"), "the cause is kept: %v", err)
	assert.Equal(t, int64(2), int64(proxy.Logins()), "logins: the JDBC algorithm's")
}

// realDB is a real server of the tests' environment.
type realDB struct {
	name, env, driver string
	// rules retries its deadlock victims; params make PostgreSQL detect a
	// deadlock on the crl pool's connections (deadlock_timeout) well
	// before the holder's session does (slowDetection), and late enough
	// that the cycle is closed when the check runs, on a loaded machine too.
	// PostgreSQL's retry waits longer than MariaDB's: InnoDB hands the
	// victim's row to the waiting holder as it rolls back, PostgreSQL's
	// holder must wake and take it, and a retry that takes it first on a
	// loaded machine closes the same cycle again.
	rules, params string
	// lockBoth locks rows 1 and 2 of table, 1 first, in one statement
	// that writes (UPDATE) or reads (SELECT … FOR UPDATE, one aggregate
	// row: its error comes before its first row).
	lockBoth func(table string, write bool) string
	// slowDetection makes the holder's session detect deadlocks late, so
	// that the crl statement is the victim.
	slowDetection string
}

var realDBs = []realDB{
	{name: "mariadb", env: "CRL_MYSQL_DSN", driver: "mysql", rules: "{1213:2,10ms*1}",
		lockBoth: func(tb string, write bool) string {
			if write {
				return "UPDATE " + tb + " SET v = v + 10 WHERE id IN (1, 2) ORDER BY id"
			}
			return "SELECT SUM(v) FROM " + tb + " WHERE id IN (1, 2) FOR UPDATE"
		}},
	{name: "postgres", env: "CRL_POSTGRES_DSN", driver: "pgx", rules: "{40P01:2,200ms*1}", params: "deadlock_timeout=1s",
		slowDetection: "SET deadlock_timeout = '10s'",
		lockBoth: func(tb string, write bool) string {
			if write {
				return "UPDATE " + tb + " SET v = v + 10 WHERE id IN (SELECT id FROM " + tb + " WHERE id IN (1, 2) ORDER BY id FOR UPDATE)"
			}
			return "SELECT sum(v) FROM (SELECT v FROM " + tb + " WHERE id IN (1, 2) ORDER BY id FOR UPDATE) s"
		}},
}

func (d realDB) dsn(t *testing.T) string {
	dsn := os.Getenv(d.env)
	if dsn == "" {
		t.Skipf("%s not set", d.env)
	}
	if d.params == "" {
		return dsn
	}
	if strings.Contains(dsn, "?") {
		return dsn + "&" + d.params
	}
	return dsn + "?" + d.params
}

// admin returns the server's DSN (dsn) and a plain pool over it, for the
// test's own statements, closed at the test's end.
func (d realDB) admin(t *testing.T) (string, *sql.DB) {
	t.Helper()
	dsn := d.dsn(t)
	admin, err := sql.Open(d.driver, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, admin.Close()) })
	return dsn, admin
}

type retryCount struct {
	core.NopObserver
	n atomic.Int64
}

func (r *retryCount) RetryScheduled(core.RetryScheduled) { r.n.Add(1) }

// A real deadlock on an autocommit statement of a crl pool: a holder
// transaction locks row 2; the statement locks row 1, then waits for row 2;
// the holder then asks for row 1, which closes the cycle. The server
// picks the statement as the victim (InnoDB: the holder has written more;
// PostgreSQL: the statement waited first and detects first); crl runs it
// again, it waits for the holder's COMMIT and succeeds: retried once, each
// row written once by each side.
func TestRealDeadlockOnAnAutocommitStatementIsRetried(t *testing.T) {
	kinds := []struct {
		name  string
		write bool
		run   func(ctx context.Context, db *sql.DB, q string) error
	}{
		{"Exec", true, func(ctx context.Context, db *sql.DB, q string) error { _, err := db.ExecContext(ctx, q); return err }},
		{"Query", false, func(ctx context.Context, db *sql.DB, q string) error {
			rows, err := db.QueryContext(ctx, q)
			if err != nil {
				return err
			}
			for rows.Next() {
			}
			return errorsJoin(rows.Err(), rows.Close())
		}},
		{"QueryRow", false, func(ctx context.Context, db *sql.DB, q string) error {
			var v int64
			return db.QueryRowContext(ctx, q).Scan(&v)
		}},
		{"Prepare", true, func(ctx context.Context, db *sql.DB, q string) error {
			st, err := db.PrepareContext(ctx, q)
			if err != nil {
				return err
			}
			_, err = st.ExecContext(ctx)
			return errorsJoin(err, st.Close())
		}},
	}
	for _, d := range realDBs {
		t.Run(d.name, func(t *testing.T) {
			dsn := d.dsn(t)
			admin, err := sql.Open(d.driver, os.Getenv(d.env))
			require.NoError(t, err)
			defer admin.Close()
			for _, k := range kinds {
				t.Run(k.name, func(t *testing.T) {
					tb := fmt.Sprintf("crl_dl_%d_%d", time.Now().UnixNano()%1e9, rand.IntN(1000))
					_, err := admin.Exec("CREATE TABLE " + tb + " (id INT PRIMARY KEY, v INT NOT NULL)")
					require.NoError(t, err)
					defer admin.Exec("DROP TABLE " + tb) //nolint:errcheck // best effort
					_, err = admin.Exec("INSERT INTO " + tb + " (id, v) VALUES (1, 0), (2, 0)")
					require.NoError(t, err)

					obs := &retryCount{}
					db, err := crl.Open(d.driver, dsn, crl.WithRetryExec(d.rules), config.WithObserver(obs))
					require.NoError(t, err)
					defer db.Close()
					require.NoError(t, db.Ping())

					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					defer cancel()
					err = realDeadlock(t, ctx, d, admin, tb, func() error { return k.run(ctx, db, d.lockBoth(tb, k.write)) })
					require.NoError(t, err, "the victim was retried")
					assert.Equal(t, int64(1), obs.n.Load(), "retries")

					want := int64(1)
					if k.write {
						want = 11
					}
					for id := 1; id <= 2; id++ {
						var v int64
						require.NoError(t, admin.QueryRow(fmt.Sprintf("SELECT v FROM %s WHERE id = %d", tb, id)).Scan(&v))
						assert.Equal(t, want, v, "row %d", id)
					}
				})
			}
		})
	}
}

// realDeadlock makes victim a real deadlock victim on d: a holder
// transaction on admin locks row 2 of table; victim, which takes row 1,
// asks for row 2; the holder then asks for row 1, which closes the
// cycle. The server picks victim (InnoDB: the holder has written more;
// PostgreSQL: victim's session detects first, its deadlock_timeout
// shorter than the holder's). It returns victim's error once the holder
// has committed.
func realDeadlock(t *testing.T, ctx context.Context, d realDB, admin *sql.DB, table string, victim func() error) error {
	t.Helper()
	tx := holdRow2(t, ctx, d, admin, table)
	done := make(chan error, 1)
	go func() { done <- victim() }()
	time.Sleep(300 * time.Millisecond) // victim now holds row 1 and waits for row 2
	_, err := tx.ExecContext(ctx, "UPDATE "+table+" SET v = v + 1 WHERE id = 1")
	require.NoError(t, err, "the holder is not the victim")
	require.NoError(t, tx.Commit())
	return <-done
}

// realDeadlockClosedBy is realDeadlock for a victim whose transaction
// already holds row 1: the holder asks for row 1 first, and victim, asking
// for row 2, closes the cycle (so PostgreSQL's check, which runs once per
// wait, finds it in victim's session).
func realDeadlockClosedBy(t *testing.T, ctx context.Context, d realDB, admin *sql.DB, table string, victim func() error) error {
	t.Helper()
	tx := holdRow2(t, ctx, d, admin, table)
	held := make(chan error, 1)
	go func() {
		_, err := tx.ExecContext(ctx, "UPDATE "+table+" SET v = v + 1 WHERE id = 1")
		held <- err
	}()
	time.Sleep(300 * time.Millisecond) // the holder now waits for row 1
	done := make(chan error, 1)
	go func() { done <- victim() }()
	require.NoError(t, <-held, "the holder is not the victim")
	require.NoError(t, tx.Commit())
	return <-done
}

// holdRow2 begins the holder's transaction of realDeadlock on admin: row
// 2 of table written, and on MariaDB weighed down so that InnoDB picks
// the other side as the victim; on PostgreSQL its session detects
// deadlocks late (slowDetection). The transaction's connection goes back
// to admin's pool at the test's end.
func holdRow2(t *testing.T, ctx context.Context, d realDB, admin *sql.DB, table string) *sql.Tx {
	t.Helper()
	holder, err := admin.Conn(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { holder.Close() })
	if d.slowDetection != "" {
		_, err = holder.ExecContext(ctx, d.slowDetection)
		require.NoError(t, err)
	}
	tx, err := holder.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, "UPDATE "+table+" SET v = v + 1 WHERE id = 2")
	require.NoError(t, err)
	if d.driver == "mysql" {
		weight := fmt.Sprintf("%s_w%d", table, rand.IntN(1e6))
		_, err = tx.ExecContext(ctx, "CREATE TEMPORARY TABLE "+weight+" (n INT)")
		require.NoError(t, err)
		_, err = tx.ExecContext(ctx, "INSERT INTO "+weight+" SELECT seq FROM seq_1_to_2000")
		require.NoError(t, err)
	}
	return tx
}

// A transaction begun as statement text on a *sql.Conn of a crl pool, on
// a real server, with a real deadlock: the statement the server chose as
// the victim ran once (server-side count), the caller gets the driver's
// own deadlock error, and after its ROLLBACK nothing of the transaction
// is applied: on MariaDB the victim's re-run alone would commit it in
// autocommit after InnoDB rolled the transaction back (half of it
// applied), on PostgreSQL it would meet the aborted transaction (25P02
// instead of 40P01). After the end (and SET autocommit=1) a deadlock
// victim is retried again. On MariaDB the victim has an argument, so
// go-sql-driver/mysql has database/sql prepare it: the prepared path.
func TestRealTextTransactionIsNotRetriedAlone(t *testing.T) {
	for _, c := range []struct {
		db         string
		begin, end []string
	}{
		{"mariadb", []string{"START TRANSACTION"}, []string{"ROLLBACK"}},
		{"mariadb", []string{"SET autocommit=0", "COMMIT"}, []string{"ROLLBACK", "SET autocommit=1"}},
		{"postgres", []string{"BEGIN"}, []string{"ROLLBACK"}},
		{"postgres", []string{"START TRANSACTION ISOLATION LEVEL READ COMMITTED"}, []string{"END"}},
	} {
		t.Run(c.db+"/"+c.begin[0], func(t *testing.T) {
			d := realDBNamed(t, c.db)
			dsn := d.dsn(t)
			admin, err := sql.Open(d.driver, os.Getenv(d.env))
			require.NoError(t, err)
			defer admin.Close()
			tb := realTable(t, admin)
			obs := &retryCount{}
			db, err := crl.Open(d.driver, dsn, crl.WithRetryExec(d.rules), config.WithObserver(obs))
			require.NoError(t, err)
			defer db.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			conn, err := db.Conn(ctx)
			require.NoError(t, err)
			defer conn.Close()

			first, victim, executions := textStatements(t, ctx, d, admin, conn, tb)
			before := executions()
			for _, q := range c.begin {
				_, err = conn.ExecContext(ctx, q)
				require.NoError(t, err)
			}
			require.NoError(t, first())
			err = realDeadlockClosedBy(t, ctx, d, admin, tb, victim)
			assertDeadlock(t, d, err)
			assert.Zero(t, obs.n.Load(), "retries")
			for _, q := range c.end {
				_, err = conn.ExecContext(ctx, q)
				require.NoError(t, err)
			}
			assert.Equal(t, before+2, executions(), "each statement of the transaction ran once")
			assertRows(t, admin, tb, 1, 1) // the holder's writes only

			err = realDeadlock(t, ctx, d, admin, tb, func() error {
				_, err := conn.ExecContext(ctx, d.lockBoth(tb, true))
				return err
			})
			require.NoError(t, err, "retried again after the end")
			assert.Equal(t, int64(1), obs.n.Load(), "retries")
			assertRows(t, admin, tb, 12, 12)
		})
	}
}

// A transaction that pgx began below the layer (through crl.Unwrap in
// (*sql.Conn).Raw), which no statement text showed: pgx's TxStatus says
// so, and the statement that fails with 40P01 in it runs once.
func TestRealPgxTransactionTheTextDidNotShow(t *testing.T) {
	d := realDBNamed(t, "postgres")
	dsn, admin := d.admin(t)
	fn := fmt.Sprintf("crl_fail_%d_%d", time.Now().UnixNano()%1e9, rand.IntN(1000))
	_, err := admin.Exec("CREATE SEQUENCE " + fn + "_seq")
	require.NoError(t, err)
	defer admin.Exec("DROP SEQUENCE " + fn + "_seq") //nolint:errcheck // best effort
	_, err = admin.Exec("CREATE FUNCTION " + fn + "() RETURNS int LANGUAGE plpgsql AS $$ BEGIN PERFORM nextval('" + fn +
		"_seq'); RAISE EXCEPTION 'deadlock detected (injected)' USING ERRCODE = '40P01'; END $$")
	require.NoError(t, err)
	defer admin.Exec("DROP FUNCTION " + fn) //nolint:errcheck // best effort

	db, err := crl.Open(d.driver, dsn, crl.WithRetryExec(d.rules))
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.Raw(func(dc any) error {
		_, err := crl.Unwrap(dc).(*stdlib.Conn).Conn().Exec(ctx, "BEGIN")
		return err
	}))
	_, err = conn.ExecContext(ctx, "SELECT "+fn+"()")
	assertDeadlock(t, d, err)
	_, err = conn.ExecContext(ctx, "ROLLBACK")
	require.NoError(t, err)
	var n int64
	require.NoError(t, admin.QueryRow("SELECT last_value FROM "+fn+"_seq").Scan(&n))
	assert.Equal(t, int64(1), n, "executions")
}

// A query whose text is built anew for each call, as GORM builds its
// statements, on a driver that runs a statement without preparing it:
// the connection knows it again by its content (the direct path), and
// whether its first row is read inside the attempt is remembered with it
// for the policy in effect. Its function fails as a deadlock victim on
// every odd value of its sequence: under a rule for updates, the error is
// met once; after a reload of the properties file to a rule for selects,
// the same text is retried and succeeds; reloaded back, it is not. On
// MariaDB the error comes after the columns, before the first row (read
// inside the attempt only while a rule could retry it: a memo of the
// policy before would miss the retry); pgx reads the first row in its
// QueryContext. Every form of a query: Query and QueryRow.
func TestRealTextBuiltAnewFollowsAReloadedPolicy(t *testing.T) {
	for _, d := range realDBs {
		t.Run(d.name, func(t *testing.T) {
			dsn, admin := d.admin(t)
			fn, used := oddFailing(t, d, admin)
			// restart makes next the sequence's next value.
			restart := func(next int) {
				_, err := admin.Exec(fmt.Sprintf("ALTER SEQUENCE %s_seq RESTART WITH %d", fn, next))
				require.NoError(t, err)
			}
			path := filepath.Join(t.TempDir(), "crl.properties")
			write := func(filter string) {
				require.NoError(t, os.WriteFile(path, []byte("retryExec={1213,40P01:2,0+0:"+filter+"}\n"), 0o644))
			}
			write("update")
			db, err := crl.Open(d.driver, dsn, config.WithPropertiesFile(path))
			require.NoError(t, err)
			defer db.Close()
			db.SetMaxOpenConns(1) // one connection, which remembers the text
			rt, ok := crl.RuntimeOf(db)
			require.True(t, ok)
			ctx := context.Background()
			query := func() string { return "SELECT " + fn + "()" } // built anew each call
			for _, form := range []struct {
				name string
				run  func() error
			}{
				{"Query", func() error {
					rows, err := db.QueryContext(ctx, query())
					if err != nil {
						return err
					}
					defer rows.Close()
					for rows.Next() {
					}
					return rows.Err()
				}},
				{"QueryRow", func() error {
					var v int64
					return db.QueryRowContext(ctx, query()).Scan(&v)
				}},
			} {
				restart(2) // even: no error
				require.NoError(t, form.run(), "%s: the first run: the text is seen", form.name)
				for _, c := range []struct {
					filter  string
					retried bool
				}{{"update", false}, {"select", true}, {"update", false}} {
					write(c.filter)
					require.NoError(t, rt.Reload())
					restart(3) // odd: an error, then even
					err := form.run()
					if c.retried {
						require.NoError(t, err, "%s, %s", form.name, c.filter)
						assert.Equal(t, int64(4), used(), "%s, %s: two attempts", form.name, c.filter)
					} else {
						assertDeadlock(t, d, err)
						assert.Equal(t, int64(3), used(), "%s, %s: one attempt", form.name, c.filter)
					}
				}
			}
		})
	}
}

// oddFailing creates a function of the test's own that fails as a
// deadlock victim (1213, 40P01) on every odd value it draws from its
// sequence and else returns 7, dropped at the test's end; it returns the
// function's name and how to read the sequence's last value drawn.
func oddFailing(t *testing.T, d realDB, admin *sql.DB) (string, func() int64) {
	t.Helper()
	fn := fmt.Sprintf("crl_odd_%d_%d", time.Now().UnixNano()%1e9, rand.IntN(1000))
	create, last := "CREATE SEQUENCE "+fn+"_seq NOCACHE", "SELECT next_not_cached_value - 1 FROM "+fn+"_seq"
	body := "CREATE FUNCTION " + fn + "() RETURNS INT NOT DETERMINISTIC BEGIN IF MOD(NEXTVAL(" + fn + "_seq), 2) = 1 THEN " +
		"SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213, MESSAGE_TEXT = 'Deadlock found (injected)'; END IF; RETURN 7; END"
	if d.driver != "mysql" {
		create, last = "CREATE SEQUENCE "+fn+"_seq", "SELECT last_value FROM "+fn+"_seq"
		body = "CREATE FUNCTION " + fn + "() RETURNS int LANGUAGE plpgsql AS $$ BEGIN IF nextval('" + fn + "_seq') % 2 = 1 THEN " +
			"RAISE EXCEPTION 'deadlock detected (injected)' USING ERRCODE = '40P01'; END IF; RETURN 7; END $$"
	}
	_, err := admin.Exec(create)
	require.NoError(t, err)
	t.Cleanup(func() { admin.Exec("DROP SEQUENCE " + fn + "_seq") }) //nolint:errcheck // best effort
	_, err = admin.Exec(body)
	require.NoError(t, err)
	t.Cleanup(func() { admin.Exec("DROP FUNCTION " + fn) }) //nolint:errcheck // best effort
	return fn, func() int64 {
		var n int64
		require.NoError(t, admin.QueryRow(last).Scan(&n))
		return n
	}
}

// realDBNamed returns the real server of realDBs named name.
func realDBNamed(t *testing.T, name string) realDB {
	t.Helper()
	for _, d := range realDBs {
		if d.name == name {
			return d
		}
	}
	t.Fatalf("no real server %q", name)
	return realDB{}
}

// realTable creates a table of the tests' own with rows 1 and 2 at 0,
// dropped at the test's end, and returns its name.
func realTable(t *testing.T, admin *sql.DB) string {
	t.Helper()
	tb := fmt.Sprintf("crl_tt_%d_%d", time.Now().UnixNano()%1e9, rand.IntN(1000))
	_, err := admin.Exec("CREATE TABLE " + tb + " (id INT PRIMARY KEY, v INT NOT NULL)")
	require.NoError(t, err)
	t.Cleanup(func() { admin.Exec("DROP TABLE " + tb) }) //nolint:errcheck // best effort
	_, err = admin.Exec("INSERT INTO " + tb + " (id, v) VALUES (1, 0), (2, 0)")
	require.NoError(t, err)
	return tb
}

// textStatements returns the two statements of
// TestRealTextTransactionIsNotRetriedAlone's transaction, run on conn:
// the first writes row 1, the second row 2 (the server picks it as the
// deadlock victim); and how many statements of theirs the server has
// executed: on MariaDB the session's count of UPDATE statements, on
// PostgreSQL a sequence each advances before it waits for its row.
func textStatements(t *testing.T, ctx context.Context, d realDB, admin *sql.DB, conn *sql.Conn, tb string) (first, victim func() error, executions func() int64) {
	t.Helper()
	exec := func(q string, args ...any) func() error {
		return func() error { _, err := conn.ExecContext(ctx, q, args...); return err }
	}
	if d.driver == "mysql" {
		executions = func() int64 {
			var name string
			var n int64
			require.NoError(t, conn.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Com_update'").Scan(&name, &n))
			return n
		}
		return exec("UPDATE " + tb + " SET v = v + 100 WHERE id = 1"),
			exec("UPDATE "+tb+" SET v = v + ? WHERE id = 2", 10), executions
	}
	seq := tb + "_seq"
	_, err := admin.Exec("CREATE SEQUENCE " + seq)
	require.NoError(t, err)
	t.Cleanup(func() { admin.Exec("DROP SEQUENCE " + seq) }) //nolint:errcheck // best effort
	executions = func() int64 {
		var n int64
		var called bool
		require.NoError(t, admin.QueryRowContext(ctx, "SELECT last_value, is_called FROM "+seq).Scan(&n, &called))
		if !called {
			return 0
		}
		return n
	}
	return exec("UPDATE " + tb + " SET v = v + 100 WHERE id = 1 AND nextval('" + seq + "') > 0"),
		exec("UPDATE " + tb + " SET v = v + 10 WHERE id = 2 AND nextval('" + seq + "') > 0"), executions
}

// assertDeadlock asserts that err is d's deadlock error, the driver's own
// value: *mysql.MySQLError 1213, *pgconn.PgError 40P01.
func assertDeadlock(t *testing.T, d realDB, err error) {
	t.Helper()
	if d.driver == "mysql" {
		me, ok := err.(*gomysql.MySQLError)
		if assert.True(t, ok, "the driver's own *mysql.MySQLError, got %T: %v", err, err) {
			assert.Equal(t, uint16(1213), me.Number)
		}
		return
	}
	pe, ok := err.(*pgconn.PgError)
	if assert.True(t, ok, "the driver's own *pgconn.PgError, got %T: %v", err, err) {
		assert.Equal(t, "40P01", pe.Code)
	}
}

// assertRows asserts the values of rows 1 and 2 of table.
func assertRows(t *testing.T, admin *sql.DB, table string, want1, want2 int64) {
	t.Helper()
	for id, want := range map[int]int64{1: want1, 2: want2} {
		var v int64
		require.NoError(t, admin.QueryRow(fmt.Sprintf("SELECT v FROM %s WHERE id = %d", table, id)).Scan(&v))
		assert.Equal(t, want, v, "row %d", id)
	}
}

func errorsJoin(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// pgx's argument types (arrays, pgtype values) pass through the driver
// layer as through pgx's own connection.
func TestPgxArgumentTypesPassThrough(t *testing.T) {
	dsn := os.Getenv("CRL_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("CRL_POSTGRES_DSN not set")
	}
	db, err := crl.Open("pgx", dsn)
	require.NoError(t, err)
	defer db.Close()
	var n int64
	require.NoError(t, db.QueryRow("SELECT cardinality($1::int[])", []int32{1, 2, 3}).Scan(&n))
	assert.Equal(t, int64(3), n)
	var s string
	require.NoError(t, db.QueryRow("SELECT $1::numeric::text", pgtype.Numeric{Int: big.NewInt(12345), Exp: -2, Valid: true}).Scan(&s))
	assert.Equal(t, "123.45", s)
	var arr pgtype.FlatArray[string]
	require.NoError(t, db.QueryRow("SELECT ARRAY['a','b']").Scan(pgtypeMap().SQLScanner(&arr)))
	assert.Equal(t, pgtype.FlatArray[string]{"a", "b"}, arr)
}

func pgtypeMap() *pgtype.Map { return pgtype.NewMap() }

// pgx closes its connection when queryTimeout cuts a statement off, and
// answers the next statement on it with driver.ErrBadConn (not sent). The
// time-out rule's retry then runs on a new connection, in the same loop:
// two executions in all, never database/sql running the whole loop again.
func TestTimedOutAttemptRetriedOnANewPgxConnection(t *testing.T) {
	dsn := os.Getenv("CRL_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("CRL_POSTGRES_DSN not set")
	}
	admin, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	defer admin.Close()
	for _, kind := range []string{"Exec", "QueryRow"} {
		t.Run(kind, func(t *testing.T) {
			seq := fmt.Sprintf("crl_to_%d_%d", time.Now().UnixNano()%1e9, rand.IntN(1000))
			_, err := admin.Exec("CREATE SEQUENCE " + seq)
			require.NoError(t, err)
			defer admin.Exec("DROP SEQUENCE " + seq) //nolint:errcheck // best effort
			db, err := crl.Open("pgx", dsn, crl.WithRetryExec("{timeout:2,10ms*1}"),
				config.WithQueryTimeout(300*time.Millisecond))
			require.NoError(t, err)
			defer db.Close()
			db.SetMaxOpenConns(1)
			require.NoError(t, db.Ping())
			q := "SELECT pg_sleep(CASE WHEN nextval('" + seq + "') = 1 THEN 3 ELSE 0 END)::text"
			if kind == "Exec" {
				_, err = db.ExecContext(context.Background(), q)
			} else {
				var s string
				err = db.QueryRowContext(context.Background(), q).Scan(&s)
			}
			require.NoError(t, err)
			var n int64
			require.NoError(t, admin.QueryRow("SELECT last_value FROM "+seq).Scan(&n))
			assert.Equal(t, int64(2), n, "executions")
		})
	}
}

// With no retryExec anywhere, a pool retries a deadlock victim under the
// default rule {deadlock,serialization:3,100ms*2}, each wait a random
// time up to the rule's (full jitter); retryExec= (empty) retries
// nothing, as the JDBC driver does. Each family: mssqltest, MariaDB,
// PostgreSQL.
func TestDefaultRuleRetriesADeadlockWithJitter(t *testing.T) {
	type pool struct{ name, driver, family, dsn string }
	srv := mssqltest.NewServer(t)
	srv.Handle("UPDATE t SET v = 1", mssqltest.Affected(1))
	pools := []pool{{"mssqltest", "sqlserver", "sqlserver", srv.DSN()}}
	for _, d := range realDBs {
		if dsn := os.Getenv(d.env); dsn != "" {
			pools = append(pools, pool{d.name, d.driver, d.name, dsn})
		}
	}
	for _, p := range pools {
		t.Run(p.name, func(t *testing.T) {
			clock := coretest.NewClock(time.Time{})
			obs := &coretest.Observer{}
			db, err := crl.Open(p.driver, p.dsn, config.WithClock(clock), config.WithObserver(obs))
			require.NoError(t, err)
			defer db.Close()
			query := "SELECT 1"
			if p.driver == "sqlserver" {
				query = "UPDATE t SET v = 1"
			}
			crltest.Inject(db, crltest.Fault{Err: crltest.Deadlock(p.family), Times: 3, T: t})
			_, err = db.Exec(query)
			require.NoError(t, err, "retried 3 times, the fourth attempt succeeds")
			sleeps := clock.Sleeps()
			require.Len(t, sleeps, 3)
			for i, max := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
				assert.LessOrEqual(t, sleeps[i], max, "wait %d: full jitter, up to the rule's wait", i+1)
				assert.Equal(t, "deadlock", obs.Snapshot().Retries[i].Token)
			}
			assert.NotEqual(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}, sleeps, "jittered")

			sep := "?"
			if strings.Contains(p.dsn, "?") {
				sep = "&"
			}
			none, err := crl.Open(p.driver, p.dsn+sep+"retryExec=")
			require.NoError(t, err)
			defer none.Close()
			crltest.Inject(none, crltest.Fault{Err: crltest.Deadlock(p.family), Times: 1, T: t})
			_, err = none.Exec(query)
			assert.Equal(t, crltest.Deadlock(p.family), err, "retryExec= retries nothing: the driver's own error")
		})
	}
}
