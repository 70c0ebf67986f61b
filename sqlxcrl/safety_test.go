package sqlxcrl_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

// The Tx that Unsafe returns is the same transaction: its failed
// statement is the one RunInTx checks the filter against. Before, it
// recorded nothing, so a rule with a filter never retried it.
func TestUnsafeTxKeepsRecording(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={1205:2,0:update}")
	srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
	runs := 0
	err := db.RunInTx(context.Background(), nil, func(tx *sqlxcrl.Tx) error {
		runs++
		_, err := tx.Unsafe().Exec(update)
		return err
	})
	require.NoError(t, err)
	assert.Equal(t, 2, runs)
	assert.Len(t, srv.Committed(), 1)
}
