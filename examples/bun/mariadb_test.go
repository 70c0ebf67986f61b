package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // registers mysql
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/mysqldialect"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/crltest"
)

// bun's own RunInTx on MariaDB, over a pool crl.Open opened with its
// default settings and nothing else (no helper, no plugin): the transfer's
// second UPDATE is a deadlock victim, injected before it reaches the
// server or real (another session locks the two rows in the opposite
// order), and the driver layer replays the transaction. The closure runs
// once, the transfer commits once, and the server's own count of the
// UPDATE statements the pool's one session ran (its Com_update status)
// shows the first UPDATE re-sent exactly once and the second run once
// more.
func TestDeadlockInBunsRunInTxIsReplayedOnMariaDB(t *testing.T) {
	for _, real := range []bool{false, true} {
		t.Run(map[bool]string{false: "injected", true: "real"}[real], func(t *testing.T) {
			m := newMariaDB(t)
			db, err := crl.Open("mysql", m.dsn)
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, db.Close()) })
			db.SetMaxOpenConns(1) // one session: its status counts every statement of the test
			bdb := bun.NewDB(db, mysqldialect.New())
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			before := updates(t, db)
			runs := 0
			transfer := func() error {
				return bdb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
					runs++
					res, err := tx.NewUpdate().Table(m.accounts).
						Set("balance = balance - ?", 30).Where("id = ?", 1).Exec(ctx)
					if err != nil {
						return err
					}
					if n, err := res.RowsAffected(); err != nil || n != 1 {
						return fmt.Errorf("debit: %d rows: %w", n, err)
					}
					_, err = tx.NewUpdate().Table(m.accounts).
						Set("balance = balance + ?", 30).Where("id = ?", 2).Exec(ctx)
					return err
				})
			}
			if real {
				err = m.deadlock(t, ctx, transfer)
			} else {
				crltest.Inject(db, crltest.Fault{Err: crltest.Deadlock("mysql"), Match: "balance + ", Times: 1, InTx: true, T: t})
				err = transfer()
			}
			require.NoError(t, err, "replayed: bun's RunInTx never saw the deadlock")
			assert.Equal(t, 1, runs, "the closure ran once")
			assert.Equal(t, [2]int64{70, 130}, m.balances(t), "moved once")
			// The debit ran and was re-sent once; the credit ran once after
			// the replay, and once before it when the server made it the
			// victim (an injected fault stops it before the server).
			want := int64(3)
			if real {
				want = 4
			}
			assert.Equal(t, want, updates(t, db)-before, "UPDATE statements the server ran")
		})
	}
}

// mariaDB is a table of accounts (rows 1 and 2 at 100) on the MariaDB
// named by CRL_MYSQL_DSN, its name unique to the test.
type mariaDB struct {
	dsn      string
	admin    *sql.DB // a plain pool, for the other session and the checks
	accounts string
}

func newMariaDB(t *testing.T) *mariaDB {
	t.Helper()
	dsn := os.Getenv("CRL_MYSQL_DSN")
	if dsn == "" {
		t.Skip("CRL_MYSQL_DSN is not set")
	}
	admin, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, admin.Close()) })
	name := fmt.Sprintf("crl_bun_%d_%d", time.Now().UnixNano()%1e9, rand.IntN(1000))
	m := &mariaDB{dsn: dsn, admin: admin, accounts: name + "_accounts"}
	t.Cleanup(func() {
		_, err := admin.Exec("DROP TABLE IF EXISTS " + m.accounts)
		assert.NoError(t, err)
	})
	for _, q := range []string{
		"CREATE TABLE " + m.accounts + " (id INT PRIMARY KEY, balance INT NOT NULL) ENGINE=InnoDB",
		"INSERT INTO " + m.accounts + " VALUES (1, 100), (2, 100)",
	} {
		_, err := admin.Exec(q)
		require.NoError(t, err, q)
	}
	return m
}

func (m *mariaDB) balances(t *testing.T) (b [2]int64) {
	t.Helper()
	q := fmt.Sprintf("SELECT (SELECT balance FROM %[1]s WHERE id = 1), (SELECT balance FROM %[1]s WHERE id = 2)", m.accounts)
	require.NoError(t, m.admin.QueryRow(q).Scan(&b[0], &b[1]))
	return b
}

// updates returns how many UPDATE statements the session of db, a pool
// of one connection, ran (the server's Com_update, which counts a
// statement that failed too).
func updates(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	var (
		name string
		n    int64
	)
	require.NoError(t, db.QueryRow("SHOW SESSION STATUS LIKE 'Com_update'").Scan(&name, &n))
	return n
}

// deadlock runs victim, a transaction that changes row 1 then row 2, as a
// real deadlock victim: another session locks row 2 (and writes 2,000 rows
// of a table of its own, so that InnoDB picks the lighter victim), waits
// until victim waits for row 2 (its statement has run for 50 ms: the
// session's lock wait does not show in INNODB_TRX reliably), then asks
// for row 1, and commits once it has it. It returns victim's error.
func (m *mariaDB) deadlock(t *testing.T, ctx context.Context, victim func() error) error {
	t.Helper()
	conn, err := m.admin.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	other, err := conn.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer other.Rollback() //nolint:errcheck // committed below, or the test failed
	weight := m.accounts + "_w"
	_, err = m.admin.ExecContext(ctx, "CREATE TABLE "+weight+" (n INT) ENGINE=InnoDB")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = m.admin.Exec("DROP TABLE IF EXISTS " + weight) })
	for _, q := range []string{
		"SELECT id FROM " + m.accounts + " WHERE id = 2 FOR UPDATE",
		"INSERT INTO " + weight + " SELECT seq FROM seq_1_to_2000",
	} {
		_, err := other.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	done := make(chan error, 1)
	go func() { done <- victim() }()
	require.Eventually(t, func() bool {
		var n int
		err := m.admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND INFO LIKE '%balance + %' AND TIME_MS > 50").Scan(&n)
		return err == nil && n > 0
	}, 10*time.Second, 5*time.Millisecond, "the victim never waited for row 2")
	_, err = other.ExecContext(ctx, "SELECT id FROM "+m.accounts+" WHERE id = 1 FOR UPDATE")
	require.NoError(t, err, "the other session is not the victim")
	require.NoError(t, other.Commit())
	return <-done
}
