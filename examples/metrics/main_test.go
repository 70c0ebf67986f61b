package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The example against the real MariaDB: /metrics on loopback holds the
// Prometheus hook's series and the OpenTelemetry hook's, both of what the
// workload ran.
func TestExampleServesBothHooks(t *testing.T) {
	dsn := os.Getenv("CRL_MYSQL_DSN")
	if dsn == "" {
		t.Skip("CRL_MYSQL_DSN is not set")
	}
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, dsn, "127.0.0.1:0", func(url string) { urls <- url }) }()
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		cancel()
		require.NoError(t, err, "run ended before serving /metrics")
		require.FailNow(t, "run ended before serving /metrics, without an error")
	}
	resp, err := http.Get(url)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	cancel()
	require.NoError(t, <-done)

	text := string(body)
	value := func(series string) string {
		for _, line := range strings.Split(text, "\n") {
			if v, ok := strings.CutPrefix(line, series+" "); ok {
				return v
			}
		}
		assert.Fail(t, "no series "+series)
		return ""
	}
	statements := value(`database_total_requests_total{db="test",kind="statement"}`)
	assert.NotEqual(t, "0", statements)
	assert.Equal(t, statements, value(`crl_operation_duration_seconds_count{db="test",kind="statement",outcome="success"}`),
		"every statement counted is timed")
	assert.Equal(t, "1", value(`database_total_requests_total{db="test",kind="transaction"}`))
	assert.Equal(t, "1", value(`crl_operation_duration_seconds_count{db="test",kind="transaction",outcome="success"}`))
	assert.Equal(t, "0", value(`crl_breaker_open{db="test"}`))
	assert.Equal(t, "1", value(`crl_breaker_state{db="test",state="closed"}`))
	assert.Equal(t, "10", value(`crl_budget_available_tokens{class="transient",db="test"}`), "nothing failed: the budget is full")
	assert.Equal(t, "12.8", value(`crl_budget_available_tokens{class="contention",db="test"}`))
	assert.Equal(t, "0", value(`database_retry_requests_total{db="test",kind="statement"}`))
	var otel []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "otel_db_client_operation_duration_seconds_count{") {
			otel = append(otel, line)
		}
	}
	require.NotEmpty(t, otel, "the OpenTelemetry hook's histogram, through the exporter")
	joined := strings.Join(otel, "\n")
	assert.Contains(t, joined, `db_system_name="mariadb"`)
	assert.Contains(t, joined, `db_operation_name="SELECT"`)
	assert.Contains(t, joined, `db_namespace="test"`)
	assert.Contains(t, joined, `server_address="127.0.0.1"`)
	assert.Contains(t, text, `otel_crl_budget_available{crl_budget_class="contention",db_namespace="test",db_system_name="mariadb"`,
		"the OpenTelemetry hook's budget gauge, through the exporter")
}
