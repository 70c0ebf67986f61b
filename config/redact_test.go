package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An error of ParseDSN quotes pieces of the DSN; a password that follows
// the piece at fault is never among them.
func TestParseDSNErrorsHoldNoPassword(t *testing.T) {
	for _, tc := range []struct{ driver, dsn string }{
		{"sqlserver", "server=db;retryExec={1205:3,1;password=S3cretPass"},
		{"sqlserver", "server=db;retryExec={1205:3,1}x;password=S3cretPass"},
		{"sqlserver", "server=db;retryExec={1205:3,1}password=S3cretPass"},
		{"sqlserver", `server=db;retryExec="1205:3,1" pwd=S3cretPass`},
		{"sqlserver", "odbc:server=db;retryExec={1205:3,1}x;pwd={S3cretPass}"},
		{"sqlserver", "odbc:server=db;retryExec={1205:3,1;pwd={S3cretPass}"},
		{"pgx", "host=db retryExec={1205:3,1 password=S3cretPass"},
		{"pgx", "host=db retryExec={1205:3,1password=S3cretPass"},
	} {
		_, _, err := ParseDSN(tc.driver, tc.dsn)
		require.Error(t, err, tc.dsn)
		assert.NotContains(t, err.Error(), "S3c", "%s: %v", tc.dsn, err)
		assert.ErrorIs(t, err, ErrMalformed, tc.dsn)
	}
}
