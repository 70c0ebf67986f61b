package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// variant is the service over one kind of pool: as it was before it
// adopted crl (pgxpool.New), or as it is (Open, pgxcrl).
type variant struct {
	name    string
	crl     bool
	open    func(ctx context.Context, dsn string) (*Store, error)
	dsnKeys string // what the variant's connection string adds
}

var variants = []variant{
	{name: "pgxpool", open: func(ctx context.Context, dsn string) (*Store, error) {
		pool, err := pgxpool.New(ctx, dsn)
		if err != nil {
			return nil, err
		}
		return NewStore(pool), nil
	}},
	// The rules come from the connection string: the code changed only in
	// Open's first line.
	{name: "pgxcrl", crl: true, open: Open, dsnKeys: "retryExec={40P01,40001:3,200ms}"},
}

// database is a schema of its own on $CRL_POSTGRES_DSN with schema.sql
// applied, dropped when the test ends.
type database struct {
	dsn   string // with search_path set to the schema
	admin *pgxpool.Pool
}

func newDatabase(t *testing.T) database {
	t.Helper()
	dsn := os.Getenv("CRL_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("CRL_POSTGRES_DSN is not set")
	}
	ctx := context.Background()
	schema := fmt.Sprintf("sqlcpgx_%08x", rand.Uint32())
	dsn = withParams(dsn, "search_path="+schema)
	admin, err := pgxpool.New(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(admin.Close)
	ddl, err := os.ReadFile("schema.sql")
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := admin.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
		assert.NoError(t, err)
	})
	_, err = admin.Exec(ctx, string(ddl))
	require.NoError(t, err)
	return database{dsn: dsn, admin: admin}
}

func withParams(dsn, params string) string {
	if params == "" {
		return dsn
	}
	if strings.Contains(dsn, "?") {
		return dsn + "&" + params
	}
	return dsn + "?" + params
}

// store opens v's store on d with the extra connection parameters params.
func (d database) store(t *testing.T, v variant, params string) *Store {
	t.Helper()
	dsn := withParams(withParams(d.dsn, v.dsnKeys), params)
	s, err := v.open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

func (d database) balance(t *testing.T, id int64) int64 {
	t.Helper()
	var b int64
	require.NoError(t, d.admin.QueryRow(context.Background(), "SELECT balance FROM accounts WHERE id = $1", id).Scan(&b))
	return b
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func TestAccounts(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			ctx := context.Background()
			s := newDatabase(t).store(t, v, "")
			a, err := s.Create(ctx, "alice", 100)
			require.NoError(t, err)
			b, err := s.Create(ctx, "bob", 0)
			require.NoError(t, err)
			require.NoError(t, s.Deposit(ctx, b.ID, 5))
			require.NoError(t, s.Transfer(ctx, a.ID, b.ID, 30))
			assert.Error(t, s.Transfer(ctx, a.ID, 999999, 1), "no such account")
			got, err := s.Account(ctx, a.ID)
			require.NoError(t, err)
			assert.Equal(t, int64(70), got.Balance)
			all, err := s.Accounts(ctx)
			require.NoError(t, err)
			require.Len(t, all, 2)
			assert.Equal(t, int64(35), all[1].Balance)
			_, err = s.Account(ctx, 999999)
			assert.ErrorIs(t, err, pgx.ErrNoRows)
		})
	}
}

// TestInjectedDeadlock fails the first UPDATE of accounts on the server
// with a deadlock (a trigger raising SQLSTATE 40P01): the service that
// adopted crl retries it and the deposit is applied once; the one before
// gets the error.
func TestInjectedDeadlock(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			ctx := context.Background()
			d := newDatabase(t)
			s := d.store(t, v, "")
			a, err := s.Create(ctx, "alice", 100)
			require.NoError(t, err)
			for _, stmt := range []string{
				"CREATE SEQUENCE update_calls",
				`CREATE FUNCTION fail_first_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF nextval('update_calls') = 1 THEN
		RAISE EXCEPTION 'injected deadlock' USING ERRCODE = '40P01';
	END IF;
	RETURN NEW;
END $$`,
				"CREATE TRIGGER fail_first_update BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION fail_first_update()",
			} {
				_, err := d.admin.Exec(ctx, stmt)
				require.NoError(t, err)
			}
			err = s.Deposit(ctx, a.ID, 10)
			var calls int64
			require.NoError(t, d.admin.QueryRow(ctx, "SELECT last_value FROM update_calls").Scan(&calls))
			if v.crl {
				require.NoError(t, err)
				assert.Equal(t, int64(2), calls, "run again once")
				assert.Equal(t, int64(110), d.balance(t, a.ID))
				return
			}
			assert.Equal(t, "40P01", sqlState(err))
			assert.Equal(t, int64(1), calls)
			assert.Equal(t, int64(100), d.balance(t, a.ID))
		})
	}
}

// TestRealDeadlock makes the service's Transfer (it locks the debited
// row, then the credited one) the victim of a real deadlock with another
// session that holds the credited row and asks for the debited one.
func TestRealDeadlock(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			ctx := context.Background()
			d := newDatabase(t)
			// The service's session looks for a deadlock 1 s after it began
			// to wait, when the holder waits too (the holder would look
			// after 10 s): the service's statement is the victim.
			s := d.store(t, v, "deadlock_timeout=1s")
			a, err := s.Create(ctx, "alice", 100)
			require.NoError(t, err)
			b, err := s.Create(ctx, "bob", 100)
			require.NoError(t, err)

			holder, err := pgx.Connect(ctx, d.dsn)
			require.NoError(t, err)
			defer holder.Close(ctx)
			_, err = holder.Exec(ctx, "SET deadlock_timeout = '10s'")
			require.NoError(t, err)
			tx, err := holder.Begin(ctx)
			require.NoError(t, err)
			_, err = tx.Exec(ctx, "UPDATE accounts SET balance = balance + 1000 WHERE id = $1", b.ID)
			require.NoError(t, err)

			done := make(chan error, 1)
			go func() { done <- s.Transfer(ctx, a.ID, b.ID, 30) }()
			require.Eventually(t, func() bool {
				var waiting bool
				err := d.admin.QueryRow(ctx, `SELECT count(*) > 0 FROM pg_stat_activity
					WHERE wait_event_type = 'Lock' AND strpos(query, 'name: Transfer') > 0`).Scan(&waiting)
				return err == nil && waiting
			}, 10e9, 5e6, "the transfer holds alice's row and waits for bob's")
			_, err = tx.Exec(ctx, "UPDATE accounts SET balance = balance + 1000 WHERE id = $1", a.ID)
			require.NoError(t, err, "the holder goes on once the transfer, the victim, rolled back")
			require.NoError(t, tx.Commit(ctx))
			err = <-done
			if v.crl {
				require.NoError(t, err)
				assert.Equal(t, int64(1070), d.balance(t, a.ID), "the transfer applied once, after the holder's")
				assert.Equal(t, int64(1130), d.balance(t, b.ID))
				return
			}
			assert.Equal(t, "40P01", sqlState(err))
			assert.Equal(t, int64(1100), d.balance(t, a.ID))
			assert.Equal(t, int64(1100), d.balance(t, b.ID))
		})
	}
}
