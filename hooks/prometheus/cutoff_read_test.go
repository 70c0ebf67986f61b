package prometheus_test

import (
	"context"
	"os"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	crlprom "github.com/crl-go/crl/hooks/prometheus"
	"github.com/crl-go/crl/sqlxcrl"
)

// The post-mortem's slow query on the real MariaDB under the execution
// cut-off (executionCutoff=200ms): the server sends the result's header
// and then error 1969, which sqlxcrl's Get meets while it reads the row.
// Get reads inside the statement loop, so each 1969 is retried as the
// rule says ({1969:1,0}: once), charged to the retry budget (overload:
// 2 tokens each) and counted by the post-mortem's metrics: every request
// is one database_total_requests_total, every retry one
// database_retry_requests_total, every failed request one
// crl_give_ups_total{reason="exhausted"}.
func TestCutoffMetWhileReadingIsCounted(t *testing.T) {
	dsn := os.Getenv("CRL_MYSQL_DSN")
	if dsn == "" {
		t.Skip("CRL_MYSQL_DSN is not set")
	}
	reg := prom.NewPedanticRegistry()
	metrics, err := crlprom.New(reg, crlprom.Options{})
	require.NoError(t, err)
	db, err := sqlxcrl.Connect("mysql", dsn, config.WithRetryExec("{1969:1,0}"),
		config.WithExecutionCutoff(200*time.Millisecond), config.WithObserver(metrics),
		config.WithRetryBudget(core.BudgetSettings{Max: 100}), config.WithPropertiesFile(""))
	require.NoError(t, err)
	defer db.Close()

	const requests = 3
	slow := "SELECT count(*) FROM seq_1_to_20000 a, seq_1_to_20000 b WHERE a.seq + b.seq = 7"
	for range requests {
		var n int64
		err := db.GetContext(context.Background(), &n, slow)
		require.Error(t, err)
		require.ErrorIs(t, err, core.ErrRetriesExhausted, "retried once, then given up")
		number, ok := core.ErrorNumber(err)
		require.True(t, ok)
		require.Equal(t, int32(1969), number)
	}
	// 2 attempts per request, each 1969 an overload failure of 2 tokens.
	assert.InDelta(t, 100-2*2*requests, db.Retrier().Budget().Available(), 1e-9, "charged to the budget")
	assert.Equal(t, float64(requests), counterValue(t, reg, "database_total_requests_total", "kind", "statement"))
	assert.Equal(t, float64(requests), counterValue(t, reg, "database_retry_requests_total", "kind", "statement"))
	assert.Equal(t, float64(requests), counterValue(t, reg, "crl_give_ups_total", "reason", "exhausted"))
}

// counterValue sums the series of the counter name whose label has value.
func counterValue(t *testing.T, reg *prom.Registry, name, label, value string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}
