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

// On PostgreSQL, a COMMIT of a transaction in which a statement failed is
// answered with ROLLBACK, which pgx reports as ErrTxCommitRollback. Its
// outcome is known, nothing was applied: it is not core.ErrCommitUnknown
// (before, it was, telling the caller that the write may have happened).
func TestRealCommitAnsweredWithRollbackIsKnown(t *testing.T) {
	dsn := os.Getenv("CRL_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("CRL_POSTGRES_DSN is not set")
	}
	db, err := sqlxcrl.Connect("pgx", dsn, sqlxcrl.WithRetryExec("{40001,40P01:3,0}"))
	require.NoError(t, err)
	defer db.Close()
	table := fmt.Sprintf("crl_commit_rb_%d", time.Now().UnixNano()%1e9)
	db.MustExec("CREATE TABLE " + table + " (id INT PRIMARY KEY)")
	defer db.Exec("DROP TABLE " + table)

	runs := 0
	err = db.RunInTx(context.Background(), nil, func(tx *sqlxcrl.Tx) error {
		runs++
		if _, err := tx.Exec("INSERT INTO " + table + " (id) VALUES (1)"); err != nil {
			return err
		}
		_, _ = tx.Exec("SELECT 1/0") // fails; the closure goes on, the transaction is aborted
		return nil
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "commit unexpectedly resulted in rollback")
	assert.NotErrorIs(t, err, core.ErrCommitUnknown, "the server answered: nothing was applied")
	assert.Equal(t, 1, runs)
	var n int
	require.NoError(t, db.Get(&n, "SELECT COUNT(*) FROM "+table))
	assert.Zero(t, n, "the error matches what the database holds: nothing")
}
