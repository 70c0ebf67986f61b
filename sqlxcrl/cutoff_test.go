package sqlxcrl_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/sqlxcrl"
)

// TestExecutionCutoffStopsTheServer shows the server-side cut-off on real
// servers: with executionCutoff=200ms and no client-side timeout at all,
// the server itself stops a 3-second statement, the error is the timeout
// condition, and the rule {timeout:1,0+0} retries it once.
func TestExecutionCutoffStopsTheServer(t *testing.T) {
	for _, tc := range []struct{ name, env, driver, slow string }{
		{"mariadb", "CRL_MYSQL_DSN", "mysql", "SELECT SLEEP(3)"},
		{"postgres", "CRL_POSTGRES_DSN", "pgx", "SELECT pg_sleep(3)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := os.Getenv(tc.env)
			if dsn == "" {
				t.Skipf("%s is not set", tc.env)
			}
			counter := &retryCounter{}
			db, err := sqlxcrl.Connect(tc.driver, dsn, sqlxcrl.WithRetryExec("{timeout:1,0+0}"),
				config.WithExecutionCutoff(200*time.Millisecond), config.WithObserver(counter))
			require.NoError(t, err)
			defer db.Close()
			start := time.Now()
			_, err = db.ExecContext(context.Background(), tc.slow)
			require.True(t, core.IsTimeout(err), "err = %v, want the server's cut-off (a timeout)", err)
			require.ErrorIs(t, err, core.ErrRetriesExhausted, "the cut-off is retried once, then given up")
			assert.LessOrEqual(t, time.Since(start), 2*time.Second, "two cut-off attempts")
			assert.Equal(t, int64(1), counter.retries.Load(), "retries")
		})
	}
}
