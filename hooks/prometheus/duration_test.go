package prometheus_test

import (
	"context"
	"sort"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	crlprom "github.com/crl-go/crl/hooks/prometheus"
)

type conflict struct{}

func (conflict) Error() string         { return "duplicate key" }
func (conflict) SQLErrorNumber() int32 { return 2627 }

// histograms returns count and sum of each series of the histogram name,
// by its kind/outcome labels.
func histograms(t *testing.T, reg prom.Gatherer, name string) map[string][2]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string][2]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			key := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" || l.GetName() == "outcome" {
					key += "/" + l.GetValue()
				}
			}
			if h := m.GetHistogram(); h.GetSampleCount() > 0 {
				out[key] = [2]float64{float64(h.GetSampleCount()), h.GetSampleSum()}
			}
		}
	}
	return out
}

func TestOperationDurationByKindAndOutcome(t *testing.T) {
	reg := prom.NewPedanticRegistry()
	m, err := crlprom.New(reg, crlprom.Options{})
	require.NoError(t, err)
	clock := coretest.NewClock(time.Time{})
	rules, err := core.ParseStatementRules("{1205:2,1}")
	require.NoError(t, err)
	r, err := core.NewRetrier(core.Policy{Statement: rules}, core.Options{Observer: m, Clock: clock})
	require.NoError(t, err)
	ctx := context.Background()
	took := func(d time.Duration, errs ...error) func(context.Context) error {
		calls := 0
		return func(context.Context) error {
			clock.Advance(d)
			if calls++; calls <= len(errs) {
				return errs[calls-1]
			}
			return nil
		}
	}
	for range 4 {
		require.NoError(t, r.Do(ctx, "select 1", took(250*time.Millisecond)))
	}
	require.NoError(t, r.Do(ctx, "update t", took(0, deadlock{})))
	require.Error(t, r.Do(ctx, "update t", took(0, deadlock{}, deadlock{}, deadlock{})))
	require.Error(t, r.Do(ctx, "insert t", took(time.Second/8, conflict{})))
	assert.Panics(t, func() {
		_ = r.DoTx(ctx, func(context.Context) (string, error) { clock.Advance(time.Second); panic("boom") })
	})
	require.NoError(t, r.Connect(ctx, func(context.Context) error { return nil }))

	assert.Equal(t, map[string][2]float64{
		"/statement/success":   {4, 1},
		"/statement/recovered": {1, 1},
		"/statement/gave_up":   {1, 4}, // waits of 1 s and 3 s (JDBC's default +2 s change)
		"/statement/error":     {1, 0.125},
		"/transaction/panic":   {1, 1},
		"/connection/success":  {1, 0},
	}, histograms(t, reg, "crl_operation_duration_seconds"), "count and sum (seconds) of every operation")
}

func TestNamespacePrefixesCrl(t *testing.T) {
	reg := prom.NewPedanticRegistry()
	_, err := crlprom.New(reg, crlprom.Options{Namespace: "shop"})
	require.NoError(t, err)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	sort.Strings(names)
	assert.Equal(t, []string{
		"database_retry_requests_total", "database_total_requests_total", // the post-mortem's names stay
		"shop_crl_breaker_open", "shop_crl_breaker_opens_total", "shop_crl_breaker_probes_total", "shop_crl_breaker_state",
		"shop_crl_give_ups_total", "shop_crl_operation_duration_seconds",
		"shop_crl_properties_reloads_total", "shop_crl_recovered_total", "shop_crl_retries_total",
		"shop_crl_retry_wait_seconds",
		"shop_crl_tx_replays_total",
	}, names)
}

func TestBreakerGauge(t *testing.T) {
	reg := prom.NewPedanticRegistry()
	m, err := crlprom.New(reg, crlprom.Options{})
	require.NoError(t, err)
	gauge := func() float64 {
		mfs, err := reg.Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			if mf.GetName() == "crl_breaker_open" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		require.FailNow(t, "no crl_breaker_open")
		return 0
	}
	assert.Zero(t, gauge(), "no breaker watched")
	clock := coretest.NewClock(time.Time{})
	b, err := core.NewBreaker(core.BreakerSettings{Failures: 1, OpenFor: time.Minute}, clock)
	require.NoError(t, err)
	rules, err := core.ParseStatementRules("{1205:1,1}")
	require.NoError(t, err)
	r, err := core.NewRetrier(core.Policy{Statement: rules}, core.Options{Observer: m, Clock: clock, Breaker: b})
	require.NoError(t, err)
	m.WatchBreaker(b)
	assert.Zero(t, gauge())
	require.Error(t, r.Do(context.Background(), "update t", func(context.Context) error { return deadlock{} }))
	assert.Equal(t, 1.0, gauge(), "open")
	clock.Advance(time.Minute)
	require.NoError(t, r.Do(context.Background(), "update t", func(context.Context) error { return nil }))
	assert.Zero(t, gauge(), "the probe closed it")
}
