package pgxcrl_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/pgxcrl"
)

// killConn ends, on the server, the backend of p's one connection, and
// waits until it is gone: the next statement pgx sends on it finds the
// connection broken after sending it.
func killConn(t *testing.T, p *pgxcrl.Pool) {
	t.Helper()
	a := admin(t)
	var pid int32
	require.NoError(t, p.QueryRow(context.Background(), "SELECT pg_backend_pid()").Scan(&pid))
	mustExec(t, a, "SELECT pg_terminate_backend($1)", pid)
	waitFor(t, a, "SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $1", pid)
}

// A connection that broke under a statement a rule retries for it
// (badconn): a read runs again on another connection of the pool; a
// write runs once — again on another connection only when pgx never
// sent it, never when its outcome is unknown.
func TestBrokenConnectionReadRunsAgainWriteNever(t *testing.T) {
	a := admin(t)
	tbl := table(t, a, "broken", "v int")
	ctx := context.Background()
	p := open(t, "pool_max_conns=1&retryExec={badconn,57P01:2,10ms}", config.WithClock(coretest.NewClock(time.Time{})))

	killConn(t, p)
	var one int
	require.NoError(t, p.QueryRow(ctx, "SELECT 1").Scan(&one), "the read ran again on a new connection")
	assert.Equal(t, 1, one)

	killConn(t, p)
	_, err := p.Exec(ctx, "INSERT INTO "+tbl+" VALUES (1)")
	if err != nil {
		// Sent on the broken connection: its outcome is unknown, and it
		// did not run again.
		assert.Equal(t, int64(0), count(t, a, "SELECT count(*) FROM "+tbl), "%v", err)
	} else {
		// pgx found the connection closed before sending it (SafeToRetry):
		// it ran once, on another connection.
		assert.Equal(t, int64(1), count(t, a, "SELECT count(*) FROM "+tbl), "written once")
	}
	mustExec(t, a, "DELETE FROM "+tbl)

	_, err = p.Exec(ctx, "INSERT INTO "+tbl+" VALUES (2)")
	require.NoError(t, err, "the pool goes on with a new connection")
	assert.Equal(t, int64(1), count(t, a, "SELECT count(*) FROM "+tbl))
}
