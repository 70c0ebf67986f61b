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
// at once, and the connection stays in step: go-mssqldb reads both
// messages of the attention sequence, so the next statement on the same
// connection gets its own reply, not a stale acknowledgement. (A cancel
// keeps the connection; a deadline would make go-mssqldb discard it, as
// context.DeadlineExceeded is a net.Error.)
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
		ctx, cancel := context.WithCancel(context.Background())
		timer := time.AfterFunc(50*time.Millisecond, cancel)
		start := time.Now()
		err := cancelled(ctx)
		timer.Stop()
		cancel()
		require.ErrorIs(t, err, context.Canceled)
		// go-mssqldb waits 5 s for a confirmation it does not get.
		assert.Less(t, time.Since(start), 4*time.Second)

		res, err := db.Exec("DELETE FROM t")
		require.NoError(t, err)
		n, err := res.RowsAffected()
		require.NoError(t, err)
		assert.Equal(t, int64(7), n)
	}
	assert.Equal(t, 1, srv.Logins(), "both cancels kept the connection")
}
