package prometheus_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/hooks"
	crlprom "github.com/crl-go/crl/hooks/prometheus"
)

type deadlock struct{}

func (deadlock) Error() string         { return "deadlock" }
func (deadlock) SQLErrorNumber() int32 { return 1205 }

func TestMetricsFromARealLoop(t *testing.T) {
	reg := prom.NewPedanticRegistry()
	m, err := crlprom.New(reg, crlprom.Options{ConstLabels: prom.Labels{"db": "orders"}})
	require.NoError(t, err)
	rules, err := core.ParseStatementRules("{1205:2,1}")
	require.NoError(t, err)
	r, err := core.NewRetrier(core.Policy{Statement: rules}, core.Options{Observer: m, Clock: coretest.NewClock(time.Time{})})
	require.NoError(t, err)
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
	m.RetryScheduled(core.RetryScheduled{Kind: core.KindConnection, Attempt: 1})
	txRuns := 0
	_ = r.DoTx(context.Background(), func(context.Context) (string, error) {
		if txRuns++; txRuns == 1 {
			return "update t", deadlock{}
		}
		return "", nil
	})

	want := `
# HELP database_retry_requests_total Retries scheduled by crl, one per retry, by loop kind.
# TYPE database_retry_requests_total counter
database_retry_requests_total{db="orders",kind="connection"} 1
database_retry_requests_total{db="orders",kind="statement"} 3
database_retry_requests_total{db="orders",kind="transaction"} 1
# HELP database_total_requests_total Database operations run through crl: statements, transaction units, connections (however many attempts each took).
# TYPE database_total_requests_total counter
database_total_requests_total{db="orders",kind="connection"} 0
database_total_requests_total{db="orders",kind="statement"} 2
database_total_requests_total{db="orders",kind="transaction"} 1
`
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want),
		"database_retry_requests_total", "database_total_requests_total"))

	want = `
# HELP crl_recovered_total Operations that succeeded after at least one retry.
# TYPE crl_recovered_total counter
crl_recovered_total{db="orders",kind="connection"} 0
crl_recovered_total{db="orders",kind="statement"} 1
crl_recovered_total{db="orders",kind="transaction"} 1
# HELP crl_retries_total Retries scheduled, by loop kind and the error token whose rule fired.
# TYPE crl_retries_total counter
crl_retries_total{db="orders",kind="statement",token="1205"} 3
crl_retries_total{db="orders",kind="statement",token="1213"} 0
crl_retries_total{db="orders",kind="statement",token="40P01"} 0
crl_retries_total{db="orders",kind="transaction",token="1205"} 1
crl_retries_total{db="orders",kind="transaction",token="1213"} 0
crl_retries_total{db="orders",kind="transaction",token="40P01"} 0
# HELP crl_properties_reloads_total Reloads of the properties file, by result (ok, error, restart_required).
# TYPE crl_properties_reloads_total counter
crl_properties_reloads_total{db="orders",result="error"} 1
crl_properties_reloads_total{db="orders",result="ok"} 0
crl_properties_reloads_total{db="orders",result="restart_required"} 0
`
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want),
		"crl_recovered_total", "crl_retries_total", "crl_properties_reloads_total"))
	assert.Equal(t, 3, testutil.CollectAndCount(m, "crl_retry_wait_seconds"), "wait histograms, want one per kind")
	var exhausted float64
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "crl_give_ups_total" {
			for _, s := range mf.GetMetric() {
				if s.GetLabel()[1].GetValue() == "statement" && s.GetLabel()[2].GetValue() == "exhausted" {
					exhausted = s.GetCounter().GetValue()
				}
			}
		}
	}
	assert.Equal(t, 1.0, exhausted, "crl_give_ups_total{kind=statement,reason=exhausted}")
	_, err = crlprom.New(reg, crlprom.Options{})
	assert.Error(t, err, "registering twice must fail")
}

// Every series whose labels are known is there, at 0, as soon as the
// collector is registered: increase() and rate() see the first event.
func TestSeriesCreatedAtZero(t *testing.T) {
	reg := prom.NewPedanticRegistry()
	_, err := crlprom.New(reg, crlprom.Options{Tokens: []string{"1205", "40501"}})
	require.NoError(t, err)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]int{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			got[mf.GetName()]++
			if c := m.GetCounter(); c != nil {
				assert.Zero(t, c.GetValue(), "%s %v", mf.GetName(), m.GetLabel())
			}
		}
	}
	assert.Equal(t, map[string]int{
		"database_total_requests_total":  3,
		"database_retry_requests_total":  3,
		"crl_recovered_total":            3,
		"crl_retry_wait_seconds":         3,
		"crl_retries_total":              4,         // 2 tokens × statement, transaction
		"crl_give_ups_total":             7 + 7 + 5, // the reasons each kind can give up with
		"crl_properties_reloads_total":   3,
		"crl_operation_duration_seconds": 3 * 5, // each kind × each outcome
		"crl_breaker_open":               1,
	}, got)
	// Every reason hooks.Reason names (but "other") has its series.
	reasons := map[string]bool{}
	for _, mf := range mfs {
		if mf.GetName() != "crl_give_ups_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" {
					reasons[l.GetValue()] = true
				}
			}
		}
	}
	for _, r := range hooks.Reasons() {
		assert.True(t, reasons[r] || r == "other", "no crl_give_ups_total series for reason %q", r)
	}
}

// BenchmarkDoSuccess is the success path of the statement loop with the
// hook off (no observer) and on (Metrics counts and times the
// operation): both allocate nothing; on costs one atomic add, the two
// clock reads of the operation's duration and its observation.
func BenchmarkDoSuccess(b *testing.B) {
	m, err := crlprom.New(prom.NewRegistry(), crlprom.Options{})
	require.NoError(b, err)
	coretest.BenchmarkSuccessObserved(b, coretest.ObserverCase{Name: "hook-off"}, coretest.ObserverCase{Name: "hook-on", Observer: m})
}

func TestDoSuccessWithMetricsAllocatesNothing(t *testing.T) {
	m, err := crlprom.New(nil, crlprom.Options{})
	require.NoError(t, err)
	r, err := core.NewRetrier(core.Policy{}, core.Options{Observer: m})
	require.NoError(t, err)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		_ = r.Do(ctx, "select 1", func(context.Context) error { return nil })
	})
	assert.Zero(t, allocs)
}

// TestMetricsCountEveryOperationOnce: the metrics time every operation
// (WantsElapsed is true, and the end of each is told), and still count
// each one once, however many attempts it took.
func TestMetricsCountEveryOperationOnce(t *testing.T) {
	reg := prom.NewPedanticRegistry()
	m, err := crlprom.New(reg, crlprom.Options{})
	require.NoError(t, err)
	assert.True(t, m.WantsElapsed())
	rules, err := core.ParseStatementRules("{1205:2,1}")
	require.NoError(t, err)
	r, err := core.NewRetrier(core.Policy{Statement: rules}, core.Options{Observer: m, Clock: coretest.NewClock(time.Time{})})
	require.NoError(t, err)
	ctx := context.Background()
	for range 3 {
		require.NoError(t, r.Do(ctx, "select 1", func(context.Context) error { return nil }))
	}
	calls := 0
	require.NoError(t, r.Do(ctx, "select 1", func(context.Context) error {
		if calls++; calls == 1 {
			return deadlock{}
		}
		return nil
	}))
	want := `
# HELP database_retry_requests_total Retries scheduled by crl, one per retry, by loop kind.
# TYPE database_retry_requests_total counter
database_retry_requests_total{kind="connection"} 0
database_retry_requests_total{kind="statement"} 1
database_retry_requests_total{kind="transaction"} 0
# HELP database_total_requests_total Database operations run through crl: statements, transaction units, connections (however many attempts each took).
# TYPE database_total_requests_total counter
database_total_requests_total{kind="connection"} 0
database_total_requests_total{kind="statement"} 4
database_total_requests_total{kind="transaction"} 0
`
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want),
		"database_retry_requests_total", "database_total_requests_total"))
}
