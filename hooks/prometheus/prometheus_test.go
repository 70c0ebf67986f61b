package prometheus_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	crlprom "github.com/crl-go/crl/hooks/prometheus"
)

type deadlock struct{}

func (deadlock) Error() string         { return "deadlock" }
func (deadlock) SQLErrorNumber() int32 { return 1205 }

func TestMetricsFromARealLoop(t *testing.T) {
	reg := prom.NewPedanticRegistry()
	m, err := crlprom.New(reg, crlprom.Options{ConstLabels: prom.Labels{"db": "orders"}})
	if err != nil {
		t.Fatal(err)
	}
	rules, _ := core.ParseStatementRules("{1205:2,1}")
	r, err := core.NewRetrier(core.Policy{Statement: rules}, core.Options{Observer: m, Clock: coretest.NewClock(time.Time{})})
	if err != nil {
		t.Fatal(err)
	}
	_ = r.Do(context.Background(), "update t", func(context.Context) error { return deadlock{} })
	calls := 0
	_ = r.Do(context.Background(), "update t", func(context.Context) error {
		calls++
		if calls == 1 {
			return deadlock{}
		}
		return nil
	})
	m.RulesReloaded(core.RulesReloaded{Err: errors.New("bad line")})
	m.ConnectionRetry(core.ConnectionRetry{Attempt: 1})

	want := `
# HELP crl_give_ups_total Errors returned after a retryable failure, by loop kind and reason.
# TYPE crl_give_ups_total counter
crl_give_ups_total{db="orders",kind="statement",reason="exhausted"} 1
# HELP crl_recovered_total Operations that succeeded after at least one retry.
# TYPE crl_recovered_total counter
crl_recovered_total{db="orders",kind="statement"} 1
# HELP crl_retries_total Retries scheduled, by loop kind and the error token whose rule fired.
# TYPE crl_retries_total counter
crl_retries_total{db="orders",kind="statement",token="1205"} 3
# HELP crl_connection_retries_total Connection (login) retries scheduled.
# TYPE crl_connection_retries_total counter
crl_connection_retries_total{db="orders"} 1
# HELP crl_properties_reloads_total Reloads of the properties file, by result (ok, error).
# TYPE crl_properties_reloads_total counter
crl_properties_reloads_total{db="orders",result="error"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"crl_give_ups_total", "crl_recovered_total", "crl_retries_total", "crl_connection_retries_total", "crl_properties_reloads_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m, "crl_retry_wait_seconds"); n != 2 {
		t.Errorf("%d wait histograms, want statement and connection", n)
	}
	if _, err := crlprom.New(reg, crlprom.Options{}); err == nil {
		t.Error("registering twice must fail")
	}
}
