package sqlxcrl_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/conformance"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/sqlxcrl"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
)

// foreignHelpers are sqlxcrl's transaction helpers over a pool crl did
// not open: run runs fn as one transaction, exec runs a statement in it.
var foreignHelpers = []struct {
	name string
	run  func(ctx context.Context, raw *sql.DB, driver string, fn func(exec func(q string) error) error) error
}{
	{"DB.RunInTx", func(ctx context.Context, raw *sql.DB, driver string, fn func(func(string) error) error) error {
		return sqlxcrl.NewDb(raw, driver).RunInTx(ctx, nil, func(tx *sqlxcrl.Tx) error {
			return fn(func(q string) error { _, err := tx.ExecContext(ctx, q); return err })
		})
	}},
	{"RunInTxx", func(ctx context.Context, raw *sql.DB, driver string, fn func(func(string) error) error) error {
		return sqlxcrl.RunInTxx(ctx, sqlx.NewDb(raw, driver), nil, func(tx *sqlx.Tx) error {
			return fn(func(q string) error { _, err := tx.ExecContext(ctx, q); return err })
		})
	}},
}

// Over a pool sql.Open opened, on MariaDB and PostgreSQL, each helper
// runs its closure once, commits what it did, and returns the closure's
// error as it is (the driver's own value, or the caller's), rolled back.
func TestHelpersOverAForeignPool(t *testing.T) {
	conformance.EachDatabase(t, func(t *testing.T, d conformance.Database) {
		raw, err := sql.Open(d.Driver, d.DSN)
		require.NoError(t, err)
		t.Cleanup(func() { raw.Close() })
		table := fmt.Sprintf("sqlxforeign_%d", rand.Uint32())
		_, err = raw.Exec("CREATE TABLE " + table + " (id INT PRIMARY KEY)")
		require.NoError(t, err)
		t.Cleanup(func() { _, _ = raw.Exec("DROP TABLE IF EXISTS " + table) })
		count := func(id int) (n int) {
			require.NoError(t, raw.QueryRow(fmt.Sprintf("SELECT count(*) FROM %s WHERE id = %d", table, id)).Scan(&n))
			return n
		}
		ctx := context.Background()
		for i, h := range foreignHelpers {
			t.Run(h.name, func(t *testing.T) {
				id := 10 * (i + 1)
				insert := fmt.Sprintf("INSERT INTO %s (id) VALUES (%d)", table, id)
				runs := 0
				err := h.run(ctx, raw, d.Driver, func(exec func(string) error) error { runs++; return exec(insert) })
				require.NoError(t, err)
				assert.Equal(t, 1, runs, "runs")
				assert.Equal(t, 1, count(id), "committed")

				// The driver's own error (a duplicate key), returned as it is.
				var seen error
				runs = 0
				err = h.run(ctx, raw, d.Driver, func(exec func(string) error) error {
					runs++
					seen = exec(insert)
					return seen
				})
				require.Error(t, seen)
				assert.ErrorIs(t, err, seen)
				assert.Same(t, seen, err, "the closure's error itself")
				assert.Equal(t, 1, runs, "runs")

				// The caller's error, returned as it is; the transaction rolled back.
				mine := errors.New("mine")
				runs = 0
				err = h.run(ctx, raw, d.Driver, func(exec func(string) error) error {
					runs++
					require.NoError(t, exec(fmt.Sprintf("INSERT INTO %s (id) VALUES (%d)", table, id+1)))
					return mine
				})
				assert.ErrorIs(t, err, mine)
				assert.Same(t, mine, err, "the closure's error itself")
				assert.Equal(t, 1, runs, "runs")
				assert.Equal(t, 0, count(id+1), "rolled back")
			})
		}
	})
}

// Settings given to NewDb for a pool sql.Open opened are refused from the
// first use on, by a statement and by RunInTx, with an error naming
// crl.OpenDB; nothing reaches the server.
func TestNewDbRefusesSettingsForAForeignPool(t *testing.T) {
	conformance.EachDatabase(t, func(t *testing.T, d conformance.Database) {
		raw, err := sql.Open(d.Driver, d.DSN)
		require.NoError(t, err)
		t.Cleanup(func() { raw.Close() })
		db := sqlxcrl.NewDb(raw, d.Driver, sqlxcrl.WithRetryExec("{1213,40P01:3,0}"))

		_, err = db.Exec("SELECT 1")
		assert.ErrorIs(t, err, sqlxcrl.ErrForeignPoolSettings)
		assert.ErrorContains(t, err, "crl.OpenDB")
		runs := 0
		err = db.RunInTx(context.Background(), nil, func(*sqlxcrl.Tx) error { runs++; return nil })
		assert.ErrorIs(t, err, sqlxcrl.ErrForeignPoolSettings)
		assert.ErrorContains(t, err, "crl.OpenDB")
		assert.Zero(t, runs, "the closure never runs")

		_, err = sqlxcrl.WrapDB(raw, d.Driver, sqlxcrl.WithRetryExec("{1213,40P01:3,0}"))
		assert.ErrorIs(t, err, sqlxcrl.ErrForeignPoolSettings)
		assert.ErrorContains(t, err, "crl.OpenDB")
	})
}

// An observer given alone for a pool crl did not open is accepted, and
// told once per handle, when the handle is built, that nothing on the
// pool is retried: NewDb and WrapDB over two pools, two events; the
// statements, whole reads and transactions that follow, none.
func TestObserverToldOncePerForeignPool(t *testing.T) {
	conformance.EachDatabase(t, func(t *testing.T, d conformance.Database) {
		open := func() *sql.DB {
			raw, err := sql.Open(d.Driver, d.DSN)
			require.NoError(t, err)
			t.Cleanup(func() { raw.Close() })
			return raw
		}
		obs := &coretest.Observer{}
		first := sqlxcrl.NewDb(open(), d.Driver, config.WithObserver(obs))
		second, err := sqlxcrl.WrapDB(open(), d.Driver, config.WithObserver(obs))
		require.NoError(t, err)
		reloads := obs.Snapshot().Reloads
		require.Len(t, reloads, 2, "one event per handle")
		for _, e := range reloads {
			assert.Empty(t, e.Path)
			assert.ErrorIs(t, e.Err, config.ErrForeignPool)
			assert.ErrorContains(t, e.Err, `sqlxcrl: the *sql.DB of driver "`+d.Driver+`"`)
			assert.ErrorContains(t, e.Err, "crl.OpenDB")
		}

		ctx := context.Background()
		for _, db := range []*sqlxcrl.DB{first, second} {
			_, err := db.Exec("SELECT 1")
			require.NoError(t, err)
			var n []int
			require.NoError(t, db.Select(&n, "SELECT 1"))
			require.NoError(t, db.RunInTx(ctx, nil, func(tx *sqlxcrl.Tx) error { _, err := tx.Exec("SELECT 1"); return err }))
			require.Error(t, db.Get(&n, "SELECT * FROM sqlxforeign_no_such_table"))
		}
		assert.Len(t, obs.Snapshot().Reloads, 2, "no event per statement")
		assert.Empty(t, obs.Snapshot().Retries, "nothing retried")
	})
}
