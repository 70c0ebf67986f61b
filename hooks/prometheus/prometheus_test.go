package prometheus_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/hooks"
	crlprom "github.com/crl-go/crl/hooks/prometheus"
	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
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
	m.RulesReloaded(core.RulesReloaded{Err: fmt.Errorf("sqlxcrl: the pool: %w", config.ErrForeignPool)})
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
# HELP crl_properties_reloads_total Reloads of the properties file, by result (ok, error, restart_required), and handles built over a pool crl did not open (not_retried).
# TYPE crl_properties_reloads_total counter
crl_properties_reloads_total{db="orders",result="error"} 1
crl_properties_reloads_total{db="orders",result="not_retried"} 1
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
		"crl_give_ups_total":             7 + 8 + 5, // the reasons each kind can give up with
		"crl_tx_replays_total":           10,        // hooks.ReplayOutcomes: each outcome × its reasons
		"crl_properties_reloads_total":   4,         // hooks.ReloadResults
		"crl_operation_duration_seconds": 3 * 5,     // each kind × each outcome
		"crl_breaker_open":               1,
		"crl_breaker_state":              3, // closed, open, half_open: no breaker watched reads closed
		"crl_breaker_opens_total":        1,
		"crl_breaker_probes_total":       1,
	}, got, "no budget watched: no budget series")
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
// (they have OperationEnded, and the end of each is told), and still count
// each one once, however many attempts it took.
func TestMetricsCountEveryOperationOnce(t *testing.T) {
	reg := prom.NewPedanticRegistry()
	m, err := crlprom.New(reg, crlprom.Options{})
	require.NoError(t, err)
	var _ interface{ OperationEnded(core.OperationEnded) } = m
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

// guards is what one scrape says of the budget and the breaker.
type guards struct {
	available, capacity map[string]float64 // by class
	state               map[string]float64 // by state
	open, opens, probes float64
}

// scrapeGuards gathers reg and reads the budget's and the breaker's
// series (db="orders").
func scrapeGuards(t *testing.T, reg prom.Gatherer) guards {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	g := guards{available: map[string]float64{}, capacity: map[string]float64{}, state: map[string]float64{}}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			require.Equal(t, "orders", labels["db"], "%s: the pool's ConstLabels", mf.GetName())
			switch mf.GetName() {
			case "crl_budget_available_tokens":
				g.available[labels["class"]] = m.GetGauge().GetValue()
			case "crl_budget_capacity_tokens":
				g.capacity[labels["class"]] = m.GetGauge().GetValue()
			case "crl_breaker_state":
				g.state[labels["state"]] = m.GetGauge().GetValue()
			case "crl_breaker_open":
				g.open = m.GetGauge().GetValue()
			case "crl_breaker_opens_total":
				g.opens = m.GetCounter().GetValue()
			case "crl_breaker_probes_total":
				g.probes = m.GetCounter().GetValue()
			}
		}
	}
	return g
}

// A deadlock storm through the real go-mssqldb driver and sqlxcrl
// against mssqltest, on a virtual clock, read from the registry as a
// scrape would: the contention pool falls to empty while the shared bucket
// of transient and overload failures stays full; the breaker opens after
// 50 failed operations in a row, refuses, lets one probe through after
// OpenFor, and the probe's success closes it; successes refill the pool.
func TestBudgetAndBreakerGaugesThroughAStorm(t *testing.T) {
	reg := prom.NewPedanticRegistry()
	metrics, err := crlprom.New(reg, crlprom.Options{ConstLabels: prom.Labels{"db": "orders"}})
	require.NoError(t, err)
	srv := mssqltest.NewServer(t)
	clock := coretest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	db, err := sqlxcrl.Connect("sqlserver", srv.DSN()+"&retryExec={1205:2,100ms}",
		config.WithClock(clock), config.WithObserver(metrics),
		config.WithCircuitBreaker(core.BreakerSettings{Failures: 50, OpenFor: 30 * time.Second}))
	require.NoError(t, err)
	defer db.Close()
	db.SetMaxOpenConns(1)

	before := scrapeGuards(t, reg)
	assert.Empty(t, before.available, "no budget watched: no level")
	assert.Equal(t, map[string]float64{"closed": 1, "open": 0, "half_open": 0}, before.state)
	metrics.WatchBudget(db.Runtime().Retrier().Budget())
	metrics.WatchBreaker(db.Runtime().Breaker())

	full := scrapeGuards(t, reg)
	assert.Equal(t, map[string]float64{"transient": 10, "overload": 10, "contention": 12.8}, full.available)
	assert.Equal(t, full.available, full.capacity, "a new budget is full")

	ctx := context.Background()
	srv.Handle(debit, mssqltest.Error(1205))
	for range 20 {
		require.Error(t, sqlxExec(ctx, db))
	}
	mid := scrapeGuards(t, reg)
	assert.InDelta(t, 12.8-20*3*0.1, mid.available["contention"], 1e-9, "each debit's three failures cost 0.1")
	assert.Equal(t, 10.0, mid.available["overload"], "deadlocks cost the shared bucket nothing")
	assert.Equal(t, [3]float64{0, 0, 0}, [3]float64{mid.open, mid.opens, mid.probes})

	for range 30 {
		require.Error(t, sqlxExec(ctx, db))
	}
	storm := scrapeGuards(t, reg)
	assert.Zero(t, storm.available["contention"], "the storm drained the pool")
	assert.Equal(t, 12.8, storm.capacity["contention"])
	assert.Equal(t, 10.0, storm.available["transient"])
	assert.Equal(t, map[string]float64{"closed": 0, "open": 1, "half_open": 0}, storm.state, "50 failures in a row")
	assert.Equal(t, [3]float64{1, 1, 0}, [3]float64{storm.open, storm.opens, storm.probes})
	require.ErrorIs(t, sqlxExec(ctx, db), core.ErrCircuitOpen)

	srv.Handle(debit, mssqltest.Affected(1))
	clock.Advance(30 * time.Second)
	require.NoError(t, sqlxExec(ctx, db), "the probe")
	probed := scrapeGuards(t, reg)
	assert.Equal(t, map[string]float64{"closed": 1, "open": 0, "half_open": 0}, probed.state, "the probe's success closed it")
	assert.Equal(t, [3]float64{0, 1, 1}, [3]float64{probed.open, probed.opens, probed.probes})
	assert.InDelta(t, 6.4, probed.available["contention"], 1e-9, "a success refills 64 failures' worth")

	require.NoError(t, sqlxExec(ctx, db))
	after := scrapeGuards(t, reg)
	assert.Equal(t, full.available, after.available, "recovered")
}

func sqlxExec(ctx context.Context, db *sqlxcrl.DB) error {
	_, err := db.ExecContext(ctx, debit, 1)
	return err
}

// A transaction replay's events count in crl_tx_replays_total by
// outcome: replayed (Succeeded), diverged (a give-up too), skipped (no
// give-up of a loop: no replay ran).
func TestTxReplaysByOutcome(t *testing.T) {
	reg := prom.NewPedanticRegistry()
	m, err := crlprom.New(reg, crlprom.Options{})
	require.NoError(t, err)
	m.Succeeded(core.Succeeded{Kind: core.KindTransaction, Attempts: 2, Replay: true})
	m.GaveUp(core.GaveUp{Kind: core.KindTransaction, Reason: core.ErrReplayDiverged, Detail: "diverged", Replay: true})
	m.GaveUp(core.GaveUp{Kind: core.KindTransaction, Reason: core.ErrNotRetryable, Detail: "rows_open", Replay: true})
	m.GaveUp(core.GaveUp{Kind: core.KindTransaction, Reason: core.ErrRetriesExhausted, Replay: true})
	want := `
# HELP crl_tx_replays_total Transaction replays of the driver layer, by outcome (replayed, diverged, gave_up, skipped) and reason (the stop code, or why the rules gave up).
# TYPE crl_tx_replays_total counter
crl_tx_replays_total{outcome="diverged",reason="broken"} 0
crl_tx_replays_total{outcome="diverged",reason="diverged"} 1
crl_tx_replays_total{outcome="gave_up",reason="budget"} 0
crl_tx_replays_total{outcome="gave_up",reason="circuit_open"} 0
crl_tx_replays_total{outcome="gave_up",reason="deadline"} 0
crl_tx_replays_total{outcome="gave_up",reason="exhausted"} 1
crl_tx_replays_total{outcome="replayed",reason=""} 1
crl_tx_replays_total{outcome="skipped",reason="batch"} 0
crl_tx_replays_total{outcome="skipped",reason="limit"} 0
crl_tx_replays_total{outcome="skipped",reason="rows_open"} 1
`
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "crl_tx_replays_total"))
	assert.Equal(t, 1.0, counterValue(t, reg, "crl_give_ups_total", "reason", "diverged"))
	assert.Zero(t, counterValue(t, reg, "crl_give_ups_total", "reason", "not_retryable"), "a skipped replay is no give-up of a loop")
}
