package pqtest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/lib/pq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/sqlxcrl"
)

const rules = "{40P01,40001:2,0+0}"

func open(t *testing.T) (*sql.DB, string) {
	t.Helper()
	dsn := os.Getenv("CRL_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("CRL_POSTGRES_DSN is not set")
	}
	db, err := sql.Open("postgres", dsn) // lib/pq registers "postgres"
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	table := fmt.Sprintf("pqtest_%d", rand.Uint32())
	_, err = db.Exec("CREATE TABLE " + table + " (id INT PRIMARY KEY, v INT NOT NULL)")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + table) })
	_, err = db.Exec("INSERT INTO " + table + " (id, v) VALUES (1, 0), (2, 0)")
	require.NoError(t, err)
	return db, table
}

// serializationFailure makes PostgreSQL answer 40001: a REPEATABLE READ
// transaction updates a row that another committed since its snapshot.
func serializationFailure(t *testing.T, db *sql.DB, table string) error {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	require.NoError(t, err)
	defer tx.Rollback()
	var v int
	require.NoError(t, tx.QueryRowContext(ctx, "SELECT v FROM "+table+" WHERE id = 1").Scan(&v))
	_, err = db.ExecContext(ctx, "UPDATE "+table+" SET v = v + 1 WHERE id = 1")
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, "UPDATE "+table+" SET v = v + 1 WHERE id = 1")
	require.Error(t, err)
	return err
}

// deadlock makes PostgreSQL answer 40P01: two transactions each wait for
// the row the other holds; the detector picks a victim.
func deadlock(t *testing.T, db *sql.DB, table string) error {
	t.Helper()
	ctx := context.Background()
	tx1, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer tx1.Rollback()
	tx2, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer tx2.Rollback()
	_, err = tx1.ExecContext(ctx, "UPDATE "+table+" SET v = v + 1 WHERE id = 1")
	require.NoError(t, err)
	_, err = tx2.ExecContext(ctx, "UPDATE "+table+" SET v = v + 1 WHERE id = 2")
	require.NoError(t, err)
	first := make(chan error, 1)
	go func() {
		_, err := tx1.ExecContext(ctx, "UPDATE "+table+" SET v = v + 1 WHERE id = 2")
		if err != nil {
			_ = tx1.Rollback() // the victim's locks go, so the other goes on
		}
		first <- err
	}()
	_, err2 := tx2.ExecContext(ctx, "UPDATE "+table+" SET v = v + 1 WHERE id = 1")
	if err2 != nil {
		_ = tx2.Rollback()
	}
	err1 := <-first
	if err1 != nil {
		return err1
	}
	require.Error(t, err2, "one of the two is the deadlock victim")
	return err2
}

// TestOldLibPQErrorsAreRecognised: 40P01 and 40001 from real PostgreSQL
// through lib/pq v1.0.0, whose *pq.Error has no SQLState method, are
// recognised by core's rule lookup: rule {40P01,40001:2,0+0} retries each
// twice (issue 28, item 12).
func TestOldLibPQErrorsAreRecognised(t *testing.T) {
	db, table := open(t)
	for _, tc := range []struct {
		state string
		make  func(*testing.T, *sql.DB, string) error
	}{
		{"40001", serializationFailure},
		{"40P01", deadlock},
	} {
		t.Run(tc.state, func(t *testing.T) {
			real := tc.make(t, db, table)
			var pqErr *pq.Error
			require.True(t, errors.As(real, &pqErr), "%T: %v", real, real)
			assert.Equal(t, tc.state, string(pqErr.Code))
			_, hasMethod := any(pqErr).(interface{ SQLState() string })
			require.False(t, hasMethod, "this lib/pq has no SQLState method: the Code field is the only way")
			assert.False(t, core.IsTimeout(real))

			st, err := core.ParseStatementRules(rules)
			require.NoError(t, err)
			r, err := core.NewRetrier(core.Policy{Statement: st}, core.Options{})
			require.NoError(t, err)
			attempts := 0
			got := r.Do(context.Background(), "UPDATE "+table+" SET v = v + 1", func(context.Context) error {
				attempts++
				return fmt.Errorf("exec: %w", real)
			})
			assert.Equal(t, 3, attempts, "the rule for %s: 2 retries", tc.state)
			assert.ErrorIs(t, got, core.ErrRetriesExhausted)
			assert.ErrorIs(t, got, real, "the driver's error is kept")
		})
	}
}

// TestOldLibPQThroughSqlxcrl: a serialization failure met by a
// transaction of a handle opened on lib/pq v1.0.0 ("postgres") is retried
// whole by RunInTx under the rule, and the retry commits.
func TestOldLibPQThroughSqlxcrl(t *testing.T) {
	raw, table := open(t)
	h, err := sqlxcrl.Open("postgres", os.Getenv("CRL_POSTGRES_DSN"), config.WithRetryExec(rules), config.WithPropertiesFile(""))
	require.NoError(t, err)
	defer h.Close()
	ctx := context.Background()
	attempts := 0
	err = h.RunInTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead}, func(tx *sqlxcrl.Tx) error {
		attempts++
		var v int
		if err := tx.GetContext(ctx, &v, "SELECT v FROM "+table+" WHERE id = 1"); err != nil {
			return err
		}
		if attempts == 1 { // another transaction commits after this one's snapshot
			if _, err := raw.ExecContext(ctx, "UPDATE "+table+" SET v = v + 10 WHERE id = 1"); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, "UPDATE "+table+" SET v = $1 WHERE id = 1", v+1)
		return err
	})
	require.NoError(t, err)
	assert.Equal(t, 2, attempts, "40001 retried once, then committed")
	var v int
	require.NoError(t, raw.QueryRow("SELECT v FROM "+table+" WHERE id = 1").Scan(&v))
	assert.Equal(t, 11, v)
}
