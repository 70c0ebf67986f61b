package mssqltest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/mssqltest"
)

// A cancelled statement, by a batch or an RPC, returns the context's error
// at once (go-mssqldb reads both messages of the attention sequence), and
// the next statement gets its own reply.
func TestCancelledStatementLeavesConnectionInStep(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	db.SetMaxOpenConns(1)
	srv.Handle("UPDATE t SET n = n + 1", mssqltest.Delay(time.Minute, mssqltest.Affected(1)))
	srv.Handle("UPDATE t SET n = @p1", mssqltest.Hang())
	srv.Handle("DELETE FROM t", mssqltest.Affected(7))
	for _, cancelled := range []func(ctx context.Context) error{
		func(ctx context.Context) error { _, err := db.ExecContext(ctx, "UPDATE t SET n = n + 1"); return err },
		func(ctx context.Context) error { _, err := db.ExecContext(ctx, "UPDATE t SET n = @p1", 1); return err },
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		start := time.Now()
		err := cancelled(ctx)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		// go-mssqldb waits 5 s for a confirmation it does not get.
		assert.Less(t, time.Since(start), 4*time.Second)

		res, err := db.Exec("DELETE FROM t")
		require.NoError(t, err)
		n, err := res.RowsAffected()
		require.NoError(t, err)
		assert.Equal(t, int64(7), n)
	}
}
