package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ledger opens a Ledger on a fresh schema of the PostgreSQL named by
// CRL_POSTGRES_DSN, with rules in its DSN, and returns it with a plain
// pool on the schema for the checks.
func ledger(t *testing.T, rules string) (*Ledger, *sql.DB, string) {
	t.Helper()
	base := os.Getenv("CRL_POSTGRES_DSN")
	if base == "" {
		t.Skip("CRL_POSTGRES_DSN is not set")
	}
	schema := fmt.Sprintf("crl_ent_%d_%d", time.Now().UnixNano()%1e9, rand.IntN(1000))
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	dsn := base + sep + "search_path=" + schema
	admin, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE")
		assert.NoError(t, err)
		assert.NoError(t, admin.Close())
	})
	for _, q := range []string{
		"CREATE SCHEMA " + schema,
		"CREATE TABLE accounts (id INT PRIMARY KEY, balance INT NOT NULL)",
		"INSERT INTO accounts VALUES (1, 100), (2, 100)",
		// The first call of fail_once raises a deadlock (40P01), as the
		// server does for a victim; later calls return 0.
		"CREATE SEQUENCE fail_seq",
		"CREATE FUNCTION fail_once() RETURNS int LANGUAGE plpgsql AS $$ BEGIN " +
			"IF nextval('fail_seq') = 1 THEN RAISE EXCEPTION 'deadlock detected' USING ERRCODE = 'deadlock_detected'; END IF; " +
			"RETURN 0; END $$",
		"CREATE FUNCTION trg() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM fail_once(); RETURN NEW; END $$",
	} {
		_, err := admin.Exec(q)
		require.NoError(t, err, q)
	}
	l, err := Open(dsn + "&retryExec=" + rules)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, l.Close()) })
	return l, admin, schema
}

func balances(t *testing.T, admin *sql.DB) [2]int {
	t.Helper()
	var b [2]int
	require.NoError(t, admin.QueryRow("SELECT (SELECT balance FROM accounts WHERE id = 1), (SELECT balance FROM accounts WHERE id = 2)").Scan(&b[0], &b[1]))
	return b
}

// The transfer's second UPDATE is a deadlock victim once (a trigger on
// account 2 raises 40P01 the first time): crl.Retry around ent's own
// transaction re-runs it whole, its filter checked against the failing
// UPDATE, and the money moves once.
func TestTransferRetriedAfterADeadlock(t *testing.T) {
	l, admin, _ := ledger(t, "{40P01:2,10ms*1:update}")
	_, err := admin.Exec("CREATE TRIGGER t BEFORE UPDATE ON accounts FOR EACH ROW WHEN (NEW.id = 2) EXECUTE FUNCTION trg()")
	require.NoError(t, err)
	require.NoError(t, l.Transfer(context.Background(), 1, 2, 30))
	assert.Equal(t, [2]int{70, 130}, balances(t, admin), "moved once")
	var calls int
	require.NoError(t, admin.QueryRow("SELECT last_value FROM fail_seq").Scan(&calls))
	assert.Equal(t, 2, calls, "the transaction ran twice")
}

// ent's client.Tx with nothing of crl around it: the driver layer replays
// the transaction whose second UPDATE was the victim (the first re-sent,
// the second run again), and it commits once.
func TestEntTxWithoutRetryIsReplayed(t *testing.T) {
	l, admin, _ := ledger(t, "{40P01:2,10ms*1:update}")
	_, err := admin.Exec("CREATE TRIGGER t BEFORE UPDATE ON accounts FOR EACH ROW WHEN (NEW.id = 2) EXECUTE FUNCTION trg()")
	require.NoError(t, err)
	ctx := context.Background()
	tx, err := l.drv.Tx(ctx)
	require.NoError(t, err)
	var res sql.Result
	require.NoError(t, tx.Exec(ctx, "UPDATE accounts SET balance = balance - $1 WHERE id = $2", []any{30, 1}, &res))
	require.NoError(t, tx.Exec(ctx, "UPDATE accounts SET balance = balance + $1 WHERE id = $2", []any{30, 2}, &res),
		"replayed: the caller never sees the deadlock")
	require.NoError(t, tx.Commit())
	assert.Equal(t, [2]int{70, 130}, balances(t, admin), "moved once")
	var calls int
	require.NoError(t, admin.QueryRow("SELECT last_value FROM fail_seq").Scan(&calls))
	assert.Equal(t, 2, calls, "the victim's UPDATE ran twice")
}

// Without a rule for 40P01 the transfer fails with the server's error and
// moves nothing, as before the adoption.
func TestTransferWithoutARuleFails(t *testing.T) {
	l, admin, _ := ledger(t, "{1205:2,10ms*1}")
	_, err := admin.Exec("CREATE TRIGGER t BEFORE UPDATE ON accounts FOR EACH ROW WHEN (NEW.id = 2) EXECUTE FUNCTION trg()")
	require.NoError(t, err)
	err = l.Transfer(context.Background(), 1, 2, 30)
	require.ErrorContains(t, err, "40P01")
	assert.Equal(t, [2]int{100, 100}, balances(t, admin))
}

// A read outside a transaction is retried by the driver layer alone.
func TestBalanceRetriedAfterADeadlock(t *testing.T) {
	l, admin, _ := ledger(t, "{40P01:2,10ms*1}")
	_, err := admin.Exec("CREATE VIEW v AS SELECT id, balance + fail_once() AS balance FROM accounts")
	require.NoError(t, err)
	_, err = admin.Exec("ALTER TABLE accounts RENAME TO accounts_t")
	require.NoError(t, err)
	_, err = admin.Exec("CREATE VIEW accounts AS SELECT id, balance + fail_once() AS balance FROM accounts_t")
	require.NoError(t, err)
	b, err := l.Balance(context.Background(), 1)
	require.NoError(t, err)
	assert.Equal(t, 100, b)
}

// ent's client.Tx with nothing of crl around it, on PostgreSQL, as a real
// deadlock victim: another session locks account 2, the transfer updates
// account 1 and waits for account 2, the other session then asks for
// account 1. The transfer's session detects the deadlock first (its
// deadlock_timeout is 1 s, the other's 10 s), the driver layer replays
// the transaction, and it commits once. Per-row sequences, which no
// rollback resets, count the rows each UPDATE changed: account 1's twice
// (run, re-sent once), account 2's once (the victim's UPDATE never got
// the row).
func TestEntTxRealDeadlockIsReplayed(t *testing.T) {
	l, admin, _ := ledger(t, "{40P01:2,10ms*1}&deadlock_timeout=1s")
	for _, q := range []string{
		"CREATE SEQUENCE upd_1",
		"CREATE SEQUENCE upd_2",
		"CREATE FUNCTION count_upd() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN " +
			"PERFORM nextval('upd_' || NEW.id); RETURN NEW; END $$",
		"CREATE TRIGGER c BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION count_upd()",
	} {
		_, err := admin.Exec(q)
		require.NoError(t, err, q)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := admin.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	other, err := conn.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer other.Rollback() //nolint:errcheck // committed below, or the test failed
	var pid int64
	require.NoError(t, other.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid))
	for _, q := range []string{"SET LOCAL deadlock_timeout = '10s'", "SELECT id FROM accounts WHERE id = 2 FOR UPDATE"} {
		_, err := other.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			tx, err := l.drv.Tx(ctx)
			if err != nil {
				return err
			}
			var res sql.Result
			if err := tx.Exec(ctx, "UPDATE accounts SET balance = balance - $1 WHERE id = $2", []any{30, 1}, &res); err != nil {
				return fmt.Errorf("debit: %w (rollback: %v)", err, tx.Rollback())
			}
			if err := tx.Exec(ctx, "UPDATE accounts SET balance = balance + $1 WHERE id = $2", []any{30, 2}, &res); err != nil {
				return fmt.Errorf("credit: %w (rollback: %v)", err, tx.Rollback())
			}
			return tx.Commit()
		}()
	}()
	require.Eventually(t, func() bool {
		var n int
		err := admin.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))", pid).Scan(&n)
		return err == nil && n > 0
	}, 10*time.Second, 5*time.Millisecond, "the transfer never waited for account 2")
	_, err = other.ExecContext(ctx, "SELECT id FROM accounts WHERE id = 1 FOR UPDATE")
	require.NoError(t, err, "the other session is not the victim")
	require.NoError(t, other.Commit())
	require.NoError(t, <-done, "replayed: ent's Tx never saw the deadlock")
	assert.Equal(t, [2]int{70, 130}, balances(t, admin), "moved once")
	var upd1, upd2 int
	require.NoError(t, admin.QueryRow("SELECT (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM upd_1), (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM upd_2)").Scan(&upd1, &upd2))
	assert.Equal(t, [2]int{2, 1}, [2]int{upd1, upd2}, "rows changed: the debit run and re-sent once, the credit once")
}
