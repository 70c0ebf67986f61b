package sqlxcrl_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

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
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			start := time.Now()
			_, err = db.ExecContext(context.Background(), tc.slow)
			if !core.IsTimeout(err) || !errors.Is(err, core.ErrRetriesExhausted) {
				t.Fatalf("err = %v, want the server's cut-off, retried once", err)
			}
			if elapsed := time.Since(start); elapsed > 2*time.Second {
				t.Errorf("two cut-off attempts took %v", elapsed)
			}
			if counter.retries.Load() != 1 {
				t.Errorf("%d retries, want 1", counter.retries.Load())
			}
		})
	}
}
