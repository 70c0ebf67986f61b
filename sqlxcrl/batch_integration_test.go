package sqlxcrl_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/sqlxcrl"
)

// TestRealBatchUnderLockContention runs a two-statement batch in autocommit
// mode whose second statement waits for a row lock that another
// transaction holds, until the server's lock time-out, on real MariaDB
// (multiStatements=true) and PostgreSQL. On MariaDB the first UPDATE has
// committed when the second fails with 1205, so a retry of the batch would
// apply it again (before, each of the rule's retries did). The batch is
// not retried: it ran once, the error says so, and the rows hold exactly
// what that one run committed.
func TestRealBatchUnderLockContention(t *testing.T) {
	for _, tc := range []struct {
		name, env, driver, params, rules, lockTimeout string
		firstCommitted                                int // what the first UPDATE left behind
	}{
		// MariaDB commits each statement of the batch on its own.
		{"mariadb", "CRL_MYSQL_DSN", "mysql", "multiStatements=true", "{1205:3,0}", "SET SESSION innodb_lock_wait_timeout = 1", 1},
		// PostgreSQL runs a simple-protocol batch in one implicit
		// transaction: the lock time-out rolls all of it back.
		{"postgres", "CRL_POSTGRES_DSN", "pgx", "", "{55P03:3,0}", "SET lock_timeout = '300ms'", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := os.Getenv(tc.env)
			if dsn == "" {
				t.Skipf("%s is not set", tc.env)
			}
			if tc.params != "" {
				dsn += sep(dsn) + tc.params
			}
			db, err := sqlxcrl.Connect(tc.driver, dsn, sqlxcrl.WithRetryExec(tc.rules))
			require.NoError(t, err)
			defer db.Close()
			suffix := fmt.Sprintf("%d", time.Now().UnixNano()%1e9)
			a, b := "crl_batch_a_"+suffix, "crl_batch_b_"+suffix
			for _, tbl := range []string{a, b} {
				db.MustExec("CREATE TABLE " + tbl + " (id INT PRIMARY KEY, n INT NOT NULL)")
				db.MustExec("INSERT INTO " + tbl + " (id, n) VALUES (1, 0)")
				defer db.Exec("DROP TABLE " + tbl)
			}

			// Another transaction holds the row of b.
			ctx := context.Background()
			holder, err := db.DB.DB.BeginTx(ctx, nil)
			require.NoError(t, err)
			_, err = holder.ExecContext(ctx, "UPDATE "+b+" SET n = n WHERE id = 1")
			require.NoError(t, err)

			batch := tc.lockTimeout + "; UPDATE " + a + " SET n = n + 1 WHERE id = 1; UPDATE " + b + " SET n = n + 1 WHERE id = 1"
			_, err = db.ExecContext(ctx, batch)
			require.NoError(t, holder.Rollback())
			require.Error(t, err)
			assert.ErrorIs(t, err, core.ErrBatchNotRetried)
			assert.Contains(t, err.Error(), "1 attempt")

			var na, nb int
			require.NoError(t, db.Get(&na, "SELECT n FROM "+a+" WHERE id = 1"))
			require.NoError(t, db.Get(&nb, "SELECT n FROM "+b+" WHERE id = 1"))
			assert.Equal(t, tc.firstCommitted, na, "the first UPDATE was applied %d times", na)
			assert.Zero(t, nb)

			// In a transaction the same work is retried as a whole.
			runs := 0
			require.NoError(t, db.RunInTx(ctx, nil, func(tx *sqlxcrl.Tx) error {
				runs++
				if _, err := tx.Exec("UPDATE " + a + " SET n = n + 1 WHERE id = 1"); err != nil {
					return err
				}
				_, err := tx.Exec("UPDATE " + b + " SET n = n + 1 WHERE id = 1")
				return err
			}))
			require.NoError(t, db.Get(&na, "SELECT n FROM "+a+" WHERE id = 1"))
			assert.Equal(t, tc.firstCommitted+1, na)
		})
	}
}

// An error that arrives while the rows of a query are read is the failed
// statement of the transaction: on MariaDB, INSERT … RETURNING of two rows
// whose second waits for a lock another transaction holds fails in
// rows.Next, not in Queryx. RunInTx's rule, whose filter names insert,
// retries the transaction.
func TestRealRowsErrorIsTheFailedStatement(t *testing.T) {
	dsn := os.Getenv("CRL_MYSQL_DSN")
	if dsn == "" {
		t.Skip("CRL_MYSQL_DSN is not set")
	}
	db, err := sqlxcrl.Connect("mysql", dsn+sep(dsn)+"innodb_lock_wait_timeout=1", sqlxcrl.WithRetryExec("{1205:3,0:insert}"))
	require.NoError(t, err)
	defer db.Close()
	table := fmt.Sprintf("crl_rows_err_%d", time.Now().UnixNano()%1e9)
	db.MustExec("CREATE TABLE " + table + " (id INT PRIMARY KEY)")
	defer db.Exec("DROP TABLE " + table)

	ctx := context.Background()
	holder, err := db.DB.DB.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = holder.ExecContext(ctx, "INSERT INTO "+table+" (id) VALUES (1)")
	require.NoError(t, err)
	released := make(chan error, 1)
	go func() {
		time.Sleep(1500 * time.Millisecond) // after the first attempt's time-out
		released <- holder.Rollback()
	}()

	runs := 0
	err = db.RunInTx(ctx, nil, func(tx *sqlxcrl.Tx) error {
		runs++
		rows, err := tx.Queryx("INSERT INTO " + table + " (id) VALUES (2), (1) RETURNING id")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
		}
		return rows.Err()
	})
	require.NoError(t, <-released)
	require.NoError(t, err)
	assert.Equal(t, 2, runs)
	var n int
	require.NoError(t, db.Get(&n, "SELECT COUNT(*) FROM "+table))
	assert.Equal(t, 2, n)
}
