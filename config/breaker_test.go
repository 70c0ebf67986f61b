package config_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/tables/limits"
)

type deadlockErr struct{}

func (deadlockErr) Error() string         { return "deadlock" }
func (deadlockErr) SQLErrorNumber() int32 { return 1205 }

func TestRetryBreakerKey(t *testing.T) {
	c, _, err := config.ParseDSN("sqlserver", "sqlserver://h?retryBreaker=failures=2,open=5s")
	require.NoError(t, err)
	assert.Equal(t, core.BreakerSettings{Failures: 2, OpenFor: 5 * time.Second}, c.Breaker)
	for _, bad := range []string{"failures=0", "failures=x", "open=5s", "failures=2,open=-1", "failures=2,color=red", "failures=2,failures=3"} {
		_, _, err := config.ParseDSN("sqlserver", "sqlserver://h?retryBreaker="+bad)
		if assert.Error(t, err, "retryBreaker=%s", bad) {
			assert.Contains(t, err.Error(), "retryBreaker", "retryBreaker=%s", bad)
		}
	}
	rt, _, err := config.NewRuntime("sqlserver", "sqlserver://h?retryExec={1205:0}&retryBreaker=failures=2", config.WithPropertiesFile(""))
	require.NoError(t, err)
	r := rt.Retrier()
	for i := 0; i < 2; i++ {
		_ = r.Do(context.Background(), "x", func(context.Context) error { return deadlockErr{} })
	}
	// {1205:0} never retries, so 1205 is not a retryable failure: closed.
	assert.NoError(t, r.Do(context.Background(), "x", func(context.Context) error { return nil }), "a rule with count 0 does not open the breaker")
	rt, _, err = config.NewRuntime("sqlserver", "sqlserver://h?retryExec={1205:1,0}&retryBreaker=failures=2")
	require.NoError(t, err)
	r = rt.Retrier()
	for i := 0; i < 2; i++ {
		_ = r.Do(context.Background(), "x", func(context.Context) error { return deadlockErr{} })
	}
	assert.ErrorIs(t, r.Do(context.Background(), "x", func(context.Context) error { return nil }), core.ErrCircuitOpen)
}

// A breaker setting out of core's range is an error naming it, in the DSN
// and in code, never clamped, defaulted or ignored.
func TestBreakerOutOfRange(t *testing.T) {
	for bad, want := range map[string]string{
		"failures=1073741824":        "expected a whole number from 1 to 1073741823",
		"failures=2,open=25h":        "expected a time greater than zero and up to 24h0m0s",
		"failures=2,open=1e300":      "expected a time greater than zero and up to 24h0m0s",
		"failures=-1":                "expected a whole number from 1 to 1073741823",
		"failures=1073741823,open=1": "",
	} {
		_, _, err := config.ParseDSN("sqlserver", "sqlserver://h?retryBreaker="+bad)
		if want == "" {
			assert.NoError(t, err, bad)
			continue
		}
		assert.ErrorContains(t, err, want, bad)
		assert.ErrorContains(t, err, "retryBreaker", bad)
	}
	for _, s := range []core.BreakerSettings{
		{Failures: -1}, {Failures: limits.MaxBreakerFailures + 1}, {Failures: 2, OpenFor: -time.Second},
		{Failures: 2, OpenFor: 25 * time.Hour}, {OpenFor: time.Minute},
	} {
		_, _, err := config.NewRuntime("sqlserver", "sqlserver://h", config.WithPropertiesFile(""), config.WithCircuitBreaker(s))
		assert.ErrorContains(t, err, "retryBreaker", "%+v", s)
		assert.ErrorContains(t, err, "expected", "%+v", s)
	}
}

func TestExecutionCutoffKey(t *testing.T) {
	for dsn, want := range map[string]time.Duration{
		"sqlserver://h?executionCutoff=500ms":             500 * time.Millisecond,
		"sqlserver://h?executionCutoff=2":                 2 * time.Second,
		"sqlserver://h?executionCutoff=on&queryTimeout=5": 5 * time.Second,
		"sqlserver://h?executionCutoff=off":               0,
		"sqlserver://h":                                   0,
	} {
		c, _, err := config.ParseDSN("sqlserver", dsn)
		require.NoError(t, err, dsn)
		assert.Equal(t, want, c.Cutoff(), "%s: Cutoff()", dsn)
	}
	for _, dsn := range []string{"sqlserver://h?executionCutoff=soon", "sqlserver://h?executionCutoff=0"} {
		_, _, err := config.ParseDSN("sqlserver", dsn)
		assert.ErrorContains(t, err, "executionCutoff", dsn)
	}
	_, _, err := config.NewRuntime("sqlserver", "sqlserver://h?executionCutoff=on")
	assert.ErrorContains(t, err, "queryTimeout", "on without a queryTimeout")
	rt, _, err := config.NewRuntime("sqlserver", "sqlserver://h?executionCutoff=on&queryTimeout=3")
	require.NoError(t, err, "runtime cut-off")
	assert.Equal(t, 3*time.Second, rt.ExecutionCutoff(), "runtime cut-off")
}
