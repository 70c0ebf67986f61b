package sqlxcrl_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/hooks"
	"github.com/crl-go/crl/sqlxcrl"
)

// TestMalformedDSNIsFatalAndSecret: a DSN the real driver cannot read (a
// port that is no number, a bad '%' escape) is a configuration error:
// one login attempt, the driver's error (not a RetryError), naming the
// problem, and the password appears neither in the error nor in what
// the slog hook logs (issue 28, item 1).
func TestMalformedDSNIsFatalAndSecret(t *testing.T) {
	for _, tc := range []struct {
		name, driver, dsn, problem string
	}{
		{"pgx port", "pgx", "postgres://app:secret@db:notaport/shop?sslmode=disable", "notaport"},
		{"pgx escape", "pgx", "postgres://app:secret@db/sh%zzop?sslmode=disable", "%zz"},
		{"sqlserver port", "sqlserver", "sqlserver://app:secret@db:notaport?database=shop", "notaport"},
		{"sqlserver escape", "sqlserver", "sqlserver://app:secret@db/inst%zz?database=shop", "%zz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			events := &coretest.Observer{}
			obs := hooks.Multi(hooks.Slog(slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))), events)
			opts := []config.Option{config.WithObserver(obs), config.WithConnectRetryCount(3)}

			// pgx, and go-mssqldb v1.8 (which go.mod requires; its
			// OpenConnector is not database/sql's DriverContext), read
			// the DSN at each Connect: the connection loop meets the
			// error. go-mssqldb v1.11 reads it at open, and Open
			// returns it.
			x, err := sqlxcrl.Open(tc.driver, tc.dsn, opts...)
			if err != nil {
				require.Equal(t, "sqlserver", tc.driver, "pgx reads the DSN at Connect: %v", err)
				assert.Contains(t, err.Error(), "parse", "the error names the problem")
				assert.NotContains(t, err.Error(), "secret")
				assert.Empty(t, events.Snapshot().Retries)
				assert.NotContains(t, log.String(), "secret")
				return
			}
			db := x.DB.DB
			defer db.Close()
			err = db.PingContext(context.Background())
			require.Error(t, err)
			var re *core.RetryError
			assert.False(t, errors.As(err, &re), "a configuration error is not retried: %v", err)
			got := events.Snapshot()
			assert.Empty(t, got.Retries, "one login attempt")
			assert.Contains(t, err.Error(), tc.problem)
			assert.NotContains(t, err.Error(), "secret")
			assert.NotContains(t, log.String(), "secret")
		})
	}
}
