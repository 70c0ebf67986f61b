package crl_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgtype"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/testsupport/resetproxy"
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
	// deadlock soon (deadlock_timeout) on the crl pool's connections.
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
	{name: "postgres", env: "CRL_POSTGRES_DSN", driver: "pgx", rules: "{40P01:2,10ms*1}", params: "deadlock_timeout=300ms",
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
					holder, err := admin.Conn(ctx)
					require.NoError(t, err)
					defer holder.Close()
					if d.slowDetection != "" {
						_, err = holder.ExecContext(ctx, d.slowDetection)
						require.NoError(t, err)
					}
					tx, err := holder.BeginTx(ctx, nil)
					require.NoError(t, err)
					_, err = tx.ExecContext(ctx, "UPDATE "+tb+" SET v = v + 1 WHERE id = 2")
					require.NoError(t, err)
					if d.driver == "mysql" { // weigh the holder down: InnoDB picks the lighter victim
						_, err = tx.ExecContext(ctx, "CREATE TEMPORARY TABLE "+tb+"_w (n INT)")
						require.NoError(t, err)
						_, err = tx.ExecContext(ctx, "INSERT INTO "+tb+"_w SELECT seq FROM seq_1_to_2000")
						require.NoError(t, err)
					}
					done := make(chan error, 1)
					go func() { done <- k.run(ctx, db, d.lockBoth(tb, k.write)) }()
					time.Sleep(150 * time.Millisecond) // the statement now holds row 1 and waits for row 2
					_, err = tx.ExecContext(ctx, "UPDATE "+tb+" SET v = v + 1 WHERE id = 1")
					require.NoError(t, err, "the holder is not the victim")
					require.NoError(t, tx.Commit())
					require.NoError(t, <-done, "the victim was retried")
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
