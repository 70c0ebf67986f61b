package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/crl-go/crl/crltest"
)

// The store's own functions meet a real PostgreSQL deadlock (40P01) that
// another transaction provokes on purpose. A waiting session looks for a
// deadlock once, deadlock_timeout after it began to wait: the store's
// connections after 1 s (a run-time parameter pgx sends at startup), by
// when the other transaction waits too, so the store's statement is the
// victim; the other transaction's 10 s never come. The rule {40P01:1,10ms} allows
// one retry, so a call that succeeds after the deadlock was retried
// exactly once. Without a rule for 40P01 the same call fails with the
// server's deadlock error and writes nothing, as before the adoption.

// database is a fresh schema of the PostgreSQL named by CRL_POSTGRES_DSN:
// the store's table names are fixed, and other tests share the server.
type database struct {
	dsn   string  // the schema's DSN for the store, without retry settings
	admin *sql.DB // a plain pgx pool on the schema, for the other transaction and the checks
}

func newDatabase(t *testing.T) database {
	t.Helper()
	base := os.Getenv("CRL_POSTGRES_DSN")
	if base == "" {
		t.Skip("CRL_POSTGRES_DSN is not set")
	}
	schema := fmt.Sprintf("crl_bun_%d_%d", time.Now().UnixNano()%1e9, rand.IntN(1000))
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
	_, err = admin.Exec("CREATE SCHEMA " + schema)
	require.NoError(t, err)
	return database{dsn: dsn, admin: admin}
}

// open opens the store on the schema with the retry settings (DSN
// parameters, "" for none) and creates its tables.
func (d database) open(t *testing.T, settings string) *Store {
	t.Helper()
	s, err := Open(d.dsn + "&deadlock_timeout=1s" + settings)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	require.NoError(t, s.CreateSchema(context.Background()))
	return s
}

func (d database) count(t *testing.T, query string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, d.admin.QueryRow(query, args...).Scan(&n))
	return n
}

// rival is the other transaction: it takes a lock, waits until the
// store's call waits for it, then takes a lock the store's call holds.
type rival struct {
	t     *testing.T
	admin *sql.DB
	tx    *sql.Tx
	pid   int64
}

func newRival(t *testing.T, d database) *rival {
	t.Helper()
	tx, err := d.admin.Begin()
	require.NoError(t, err)
	r := &rival{t: t, admin: d.admin, tx: tx}
	t.Cleanup(func() { _ = tx.Rollback() })
	// So that the store's statement, not this one, is the victim.
	r.exec("SET LOCAL deadlock_timeout = '10s'")
	require.NoError(t, tx.QueryRow("SELECT pg_backend_pid()").Scan(&r.pid))
	return r
}

func (r *rival) exec(stmt string, args ...any) {
	r.t.Helper()
	_, err := r.tx.Exec(stmt, args...)
	require.NoError(r.t, err, stmt)
}

// awaitBlocked returns once another session waits for a lock the rival
// holds (the store's call, as nothing else touches the schema).
func (r *rival) awaitBlocked() {
	r.t.Helper()
	require.Eventually(r.t, func() bool {
		var n int64
		err := r.admin.QueryRow("SELECT count(*) FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))", r.pid).Scan(&n)
		return err == nil && n > 0
	}, 10*time.Second, 5*time.Millisecond, "the store's call never waited for the rival's lock")
}

// deadlock runs call while the rival makes it a deadlock victim: the
// rival takes first, call starts and waits for it, the rival takes then
// (the deadlock; the store's side is the victim, the rival's statement
// goes through) and rolls back. It returns call's error.
func deadlock(t *testing.T, d database, first, then string, call func() error) error {
	t.Helper()
	r := newRival(t, d)
	r.exec(first)
	done := make(chan error, 1)
	go func() { done <- call() }()
	r.awaitBlocked()
	r.exec(then)
	require.NoError(t, r.tx.Rollback())
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("the store's call did not return")
		return nil
	}
}

func isDeadlock(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40P01"
}

// The three kinds of work the store does, each hit by a deadlock, with
// the rule (retried once, the data right) and without (the server's
// error, nothing written).
func TestDeadlockInTheStoresOwnFunctions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings string
		retried  bool
	}{
		{"retried once under retryExec={40P01:1,10ms}", "&retryExec={40P01:1,10ms}", true},
		{"not retried without a rule for 40P01", "&retryExec={40001:1,10ms}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Run("autocommit write", func(t *testing.T) {
				d := newDatabase(t)
				s := d.open(t, tc.settings)
				ctx := context.Background()
				ada, err := s.OpenAccount(ctx, "ada", 10000)
				require.NoError(t, err)

				// PlaceOrder's INSERT waits for the account row's lock
				// (its foreign key check); the rival then inserts an
				// order with the same ref, which waits for the store's
				// uncommitted row.
				err = deadlock(t, d,
					fmt.Sprintf("SELECT id FROM accounts WHERE id = %d FOR UPDATE", ada.ID),
					fmt.Sprintf("INSERT INTO orders (ref, account_id, amount) VALUES ('r-1', %d, 1)", ada.ID),
					func() error { _, err := s.PlaceOrder(ctx, "r-1", ada.ID, 2500); return err })
				if !tc.retried {
					require.Error(t, err)
					assert.True(t, isDeadlock(err), "err = %v, want the server's 40P01", err)
					assert.Zero(t, d.count(t, "SELECT count(*) FROM orders"))
					return
				}
				require.NoError(t, err)
				assert.Equal(t, int64(1), d.count(t, "SELECT count(*) FROM orders WHERE ref = 'r-1' AND amount = 2500"), "one order, the store's")
				assert.Equal(t, int64(1), d.count(t, "SELECT count(*) FROM orders"), "no double write")
			})

			t.Run("transaction", func(t *testing.T) {
				d := newDatabase(t)
				s := d.open(t, tc.settings)
				ctx := context.Background()
				ada, err := s.OpenAccount(ctx, "ada", 10000)
				require.NoError(t, err)
				bob, err := s.OpenAccount(ctx, "bob", 10000)
				require.NoError(t, err)

				// Transfer has updated ada's row and waits for bob's,
				// which the rival holds; the rival then asks for ada's.
				err = deadlock(t, d,
					fmt.Sprintf("SELECT id FROM accounts WHERE id = %d FOR UPDATE", bob.ID),
					fmt.Sprintf("SELECT id FROM accounts WHERE id = %d FOR UPDATE", ada.ID),
					func() error { return s.Transfer(ctx, ada.ID, bob.ID, 3000) })
				wantAda, wantBob, wantTransfers := int64(7000), int64(13000), int64(1)
				if !tc.retried {
					require.Error(t, err)
					assert.True(t, isDeadlock(err), "err = %v, want the server's 40P01", err)
					wantAda, wantBob, wantTransfers = 10000, 10000, 0
				} else {
					require.NoError(t, err)
				}
				assert.Equal(t, wantAda, d.count(t, "SELECT balance FROM accounts WHERE id = $1", ada.ID))
				assert.Equal(t, wantBob, d.count(t, "SELECT balance FROM accounts WHERE id = $1", bob.ID))
				assert.Equal(t, int64(20000), d.count(t, "SELECT sum(balance) FROM accounts"), "no money made or lost")
				assert.Equal(t, wantTransfers, d.count(t, "SELECT count(*) FROM transfers"), "one transfer row per committed transfer")
			})

			t.Run("read", func(t *testing.T) {
				d := newDatabase(t)
				s := d.open(t, tc.settings)
				ctx := context.Background()
				ada, err := s.OpenAccount(ctx, "ada", 10000)
				require.NoError(t, err)
				_, err = s.PlaceOrder(ctx, "r-1", ada.ID, 2500)
				require.NoError(t, err)

				// A migration's table locks against OrdersOf's join:
				// the SELECT has locked orders and waits for accounts,
				// which the rival holds; the rival then asks for orders.
				var orders []Order
				err = deadlock(t, d,
					"LOCK TABLE accounts IN ACCESS EXCLUSIVE MODE",
					"LOCK TABLE orders IN ACCESS EXCLUSIVE MODE",
					func() error {
						var err error
						orders, err = s.OrdersOf(ctx, "ada")
						return err
					})
				if !tc.retried {
					require.Error(t, err)
					assert.True(t, isDeadlock(err), "err = %v, want the server's 40P01", err)
					return
				}
				require.NoError(t, err)
				require.Len(t, orders, 1)
				assert.Equal(t, "r-1", orders[0].Ref)
				require.NotNil(t, orders[0].Account)
				assert.Equal(t, "ada", orders[0].Account.Owner)
			})
		})
	}
}

// bun's own RunInTx with nothing of crl around it: the driver layer
// replays the deadlock victim's transaction (its first UPDATE re-sent, its
// count compared), so the closure runs once and the transfer commits once.
func TestDeadlockInBunsOwnRunInTxIsReplayed(t *testing.T) {
	d := newDatabase(t)
	s := d.open(t, "&retryExec={40P01:1,10ms}")
	ctx := context.Background()
	ada, err := s.OpenAccount(ctx, "ada", 10000)
	require.NoError(t, err)
	bob, err := s.OpenAccount(ctx, "bob", 10000)
	require.NoError(t, err)
	runs := 0
	err = deadlock(t, d,
		fmt.Sprintf("SELECT id FROM accounts WHERE id = %d FOR UPDATE", bob.ID),
		fmt.Sprintf("SELECT id FROM accounts WHERE id = %d FOR UPDATE", ada.ID),
		func() error {
			return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				runs++
				return move3000(ctx, tx, ada.ID, bob.ID, true)
			})
		})
	require.NoError(t, err, "replayed: bun's RunInTx never saw the deadlock")
	assert.Equal(t, 1, runs, "the closure ran once")
	assert.Equal(t, int64(7000), d.count(t, "SELECT balance FROM accounts WHERE id = $1", ada.ID))
	assert.Equal(t, int64(13000), d.count(t, "SELECT balance FROM accounts WHERE id = $1", bob.ID))
}

// The same transfer with the deadlock injected at its second UPDATE,
// before it reaches the server: the layer replays it, the closure runs
// once, and per-row sequences, which no rollback resets, count the rows
// each UPDATE changed on the server: ada's twice (run, re-sent once),
// bob's once.
func TestInjectedDeadlockInBunsOwnRunInTxIsReplayed(t *testing.T) {
	d := newDatabase(t)
	s := d.open(t, "&retryExec={40P01:1,10ms}")
	ctx := context.Background()
	ada, err := s.OpenAccount(ctx, "ada", 10000)
	require.NoError(t, err)
	bob, err := s.OpenAccount(ctx, "bob", 10000)
	require.NoError(t, err)
	for _, q := range []string{
		"CREATE SEQUENCE upd_ada",
		"CREATE SEQUENCE upd_bob",
		fmt.Sprintf("CREATE FUNCTION count_upd() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "+
			"PERFORM nextval(CASE WHEN NEW.id = %d THEN 'upd_ada' ELSE 'upd_bob' END); RETURN NEW; END $$", ada.ID),
		"CREATE TRIGGER c BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION count_upd()",
	} {
		_, err := d.admin.Exec(q)
		require.NoError(t, err, q)
	}
	crltest.Inject(s.db.DB, crltest.Fault{Err: crltest.Deadlock("postgres"), Match: "balance + ", Times: 1, InTx: true, T: t})
	runs := 0
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		runs++
		return move3000(ctx, tx, ada.ID, bob.ID, false)
	})
	require.NoError(t, err, "replayed: bun's RunInTx never saw the deadlock")
	assert.Equal(t, 1, runs, "the closure ran once")
	assert.Equal(t, int64(7000), d.count(t, "SELECT balance FROM accounts WHERE id = $1", ada.ID))
	assert.Equal(t, int64(13000), d.count(t, "SELECT balance FROM accounts WHERE id = $1", bob.ID))
	assert.Equal(t, int64(2), d.count(t, "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM upd_ada"), "ada's row: run and re-sent once")
	assert.Equal(t, int64(1), d.count(t, "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM upd_bob"), "bob's row: once, after the replay")
}

// move3000 moves 3000 from account from to account to in tx, as two
// UPDATEs; readCount reads the debit's rows affected too (the replay
// then compares that count).
func move3000(ctx context.Context, tx bun.Tx, from, to int64, readCount bool) error {
	res, err := tx.NewUpdate().Model((*Account)(nil)).
		Set("balance = balance - ?", 3000).Where("id = ?", from).Exec(ctx)
	if err != nil {
		return err
	}
	if readCount {
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return fmt.Errorf("debit: %d rows: %w", n, err)
		}
	}
	_, err = tx.NewUpdate().Model((*Account)(nil)).
		Set("balance = balance + ?", 3000).Where("id = ?", to).Exec(ctx)
	return err
}

// The program runs as before the adoption, its output unchanged.
func TestRun(t *testing.T) {
	d := newDatabase(t)
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, d.dsn+"&retryExec={40P01,40001:3,10ms*2}"))
	assert.Regexp(t, `^ada: 60\.00\nbob: 40\.00\norders of ada: ada-\d+\n$`, out.String())
}
