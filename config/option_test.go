package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

// ParseOption takes what the DSN key takes, and its option is code: it
// wins over the DSN.
func TestParseOptionReadsAsTheDSNDoes(t *testing.T) {
	for value, want := range map[string]time.Duration{
		"5": 5 * time.Second, "5s": 5 * time.Second, "1.5": 1500 * time.Millisecond, "500ms": 500 * time.Millisecond,
		"0": core.JDBCQueryTimeoutZero, "-1": 0,
	} {
		opt, err := config.ParseOption("QUERYTIMEOUT", value)
		require.NoError(t, err, value)
		fromDSN, _, err := config.ParseDSN("sqlserver", "sqlserver://h?queryTimeout="+value)
		require.NoError(t, err, value)
		assert.Equal(t, want, fromDSN.QueryTimeout, "queryTimeout=%s in the DSN", value)
		rt, _, err := config.NewRuntime("sqlserver", "sqlserver://h?queryTimeout=9", config.WithPropertiesFile(""), opt)
		require.NoError(t, err, value)
		assert.Equal(t, want, rt.Config().QueryTimeout, "the option of %q over the DSN's queryTimeout=9", value)
	}

	opt, err := config.ParseOption("retryBreaker", "failures=3")
	require.NoError(t, err)
	assert.Equal(t, core.BreakerSettings{Failures: 3}, config.NewConfig(opt).Breaker)

	_, err = config.ParseOption("queryTimeout", "5x")
	assert.ErrorIs(t, err, config.ErrInvalidValue)
	assert.EqualError(t, err, `config: queryTimeout="5x": expected -1 (none), 0, or seconds such as 30 or 1.5s`)
	_, err = config.ParseOption("querytimeot", "5")
	assert.ErrorIs(t, err, config.ErrUnknownKey)
	assert.ErrorContains(t, err, "did you mean queryTimeout?")
	_, err = config.ParseOption("color", "red")
	assert.ErrorIs(t, err, config.ErrUnknownKey)
	assert.ErrorContains(t, err, `"color": expected one of retryExec`)
}
