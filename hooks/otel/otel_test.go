package otel_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	crlotel "github.com/crl-go/crl/hooks/otel"
	"github.com/crl-go/crl/mssqltest"
)

type deadlock struct{}

func (deadlock) Error() string         { return "mssql: Transaction (Process ID 51) was deadlocked" }
func (deadlock) SQLErrorNumber() int32 { return 1205 }

type setup struct {
	spans   *tracetest.SpanRecorder
	tp      *sdktrace.TracerProvider
	reader  *sdkmetric.ManualReader
	obs     *crlotel.Observer
	retrier *core.Retrier
	clock   *coretest.Clock
}

func newSetup(t *testing.T, o crlotel.Options) *setup {
	t.Helper()
	s := &setup{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	s.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(s.spans))
	o.TracerProvider = s.tp
	o.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(s.reader))
	obs, err := crlotel.New(o)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, obs.Close()) })
	s.obs = obs
	s.clock = coretest.NewClock(time.Time{})
	rules, err := core.ParseStatementRules("{1205:2,1.5s}")
	require.NoError(t, err)
	s.retrier, err = core.NewRetrier(core.Policy{Statement: rules}, core.Options{Observer: obs, Clock: s.clock}) // no budget: spans, not the budget, are under test
	require.NoError(t, err)
	return s
}

// failing fails with a deadlock n times, then succeeds.
func failing(n int) func(context.Context) error {
	calls := 0
	return func(context.Context) error {
		if calls++; calls <= n {
			return deadlock{}
		}
		return nil
	}
}

func attrs(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestSpanEventsOnTheCallersSpan(t *testing.T) {
	s := newSetup(t, crlotel.Options{Driver: "sqlserver"})
	ctx, span := s.tp.Tracer("app").Start(context.Background(), "checkout")
	require.NoError(t, s.retrier.Do(ctx, "UPDATE accounts SET balance = 0 WHERE id = @p1", failing(2)))
	span.End()

	ended := s.spans.Ended()
	require.Len(t, ended, 1, "crl adds events to the caller's span, no span of its own")
	ev := ended[0].Events()
	require.Len(t, ev, 3)
	assert.Equal(t, "crl.retry", ev[0].Name)
	assert.Equal(t, "crl.retry", ev[1].Name)
	assert.Equal(t, "crl.succeeded", ev[2].Name)
	a := attrs(ev[0].Attributes)
	assert.Equal(t, "microsoft.sql_server", a["db.system.name"].AsString())
	assert.Equal(t, "1205", a["db.response.status_code"].AsString())
	assert.Equal(t, "1205", a["error.type"].AsString())
	assert.Equal(t, "1205", a["crl.retry.token"].AsString())
	assert.Equal(t, 1.5, a["crl.retry.wait"].AsFloat64())
	assert.EqualValues(t, 1, a["crl.retry.attempt"].AsInt64())
	assert.Equal(t, "statement", a["crl.kind"].AsString())
	_, hasQuery := a["db.query.text"]
	assert.False(t, hasQuery, "statement text only when QueryText is set")
	assert.EqualValues(t, 2, attrs(ev[1].Attributes)["crl.retry.attempt"].AsInt64())
	assert.EqualValues(t, 3, attrs(ev[2].Attributes)["crl.attempts"].AsInt64())
	assert.Equal(t, 5.0, attrs(ev[2].Attributes)["crl.elapsed"].AsFloat64(), "waits of 1.5 s and 3.5 s (JDBC's +2 s change) on the virtual clock")
}

func TestSpanPerRetriedOperationWithoutACallerSpan(t *testing.T) {
	s := newSetup(t, crlotel.Options{QueryText: true, DBSystem: "mysql"})
	ctx := context.Background()
	require.NoError(t, s.retrier.Do(ctx, "select 1", failing(0)), "no retry, no span")
	require.NoError(t, s.retrier.Do(ctx, "update t set x = 1", failing(1)))
	err := s.retrier.Do(ctx, "delete from t", failing(5))
	require.ErrorIs(t, err, core.ErrRetriesExhausted)

	ended := s.spans.Ended()
	require.Len(t, ended, 2, "one span per retried operation")
	ok, failed := ended[0], ended[1]
	assert.Equal(t, "crl.retry statement", ok.Name())
	assert.Equal(t, codes.Unset, ok.Status().Code)
	require.Len(t, ok.Events(), 1)
	assert.Equal(t, "update t set x = 1", attrs(ok.Events()[0].Attributes)["db.query.text"].AsString())
	assert.Equal(t, "mysql", attrs(ok.Attributes())["db.system.name"].AsString())
	assert.EqualValues(t, 2, attrs(ok.Attributes())["crl.attempts"].AsInt64())

	assert.Equal(t, codes.Error, failed.Status().Code)
	var retries int
	for _, e := range failed.Events() {
		if e.Name == "crl.retry" {
			retries++
		}
	}
	assert.Equal(t, 2, retries, "both retries of the failed operation, none of the other")
	fa := attrs(failed.Attributes())
	assert.Equal(t, "exhausted", fa["crl.give_up.reason"].AsString())
	assert.Equal(t, "1205", fa["error.type"].AsString())
	assert.Equal(t, "delete from t", fa["db.query.text"].AsString())
	assert.NotEqual(t, attrs(ok.Attributes())["crl.operation.id"], fa["crl.operation.id"])
}

// Concurrent retried operations without a caller span get a span each,
// holding their own retries only.
func TestConcurrentOperationsGetTheirOwnSpans(t *testing.T) {
	s := newSetup(t, crlotel.Options{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, s.retrier.Do(context.Background(), "update t", failing(2)))
		}()
	}
	wg.Wait()
	ended := s.spans.Ended()
	require.Len(t, ended, 8)
	for _, sp := range ended {
		assert.Len(t, sp.Events(), 2)
	}
}

func TestCountersThroughTheMeter(t *testing.T) {
	s := newSetup(t, crlotel.Options{})
	ctx := context.Background()
	for range 3 {
		require.NoError(t, s.retrier.Do(ctx, "select 1", failing(0)))
	}
	require.NoError(t, s.retrier.Do(ctx, "update t", failing(2)))
	tx := 0
	require.NoError(t, s.retrier.DoTx(ctx, func(context.Context) (string, error) {
		if tx++; tx == 1 {
			return "update t", deadlock{}
		}
		return "", nil
	}))
	var rm metricdata.ResourceMetrics
	require.NoError(t, s.reader.Collect(ctx, &rm))
	got := map[string]map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(t, crlotel.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			if !strings.HasPrefix(m.Name, "database.") {
				continue // the histogram and crl's counters: TestOperationDuration, TestRetryAndGiveUpCounters
			}
			sum, ok := m.Data.(metricdata.Sum[int64])
			require.True(t, ok, "%s is a sum", m.Name)
			assert.True(t, sum.IsMonotonic, m.Name)
			got[m.Name] = map[string]int64{}
			for _, dp := range sum.DataPoints {
				kind, _ := dp.Attributes.Value(crlotel.KindKey)
				got[m.Name][kind.AsString()] = dp.Value
			}
		}
	}
	assert.Equal(t, map[string]map[string]int64{
		"database.total.requests": {"statement": 4, "transaction": 1, "connection": 0},
		"database.retry.requests": {"statement": 2, "transaction": 1, "connection": 0},
	}, got, "every series from the start, at 0 until something happens")
}

// The Prometheus hook's other instruments, under crl's names: the retry
// waits (histogram, by kind), the operations recovered after retries, and
// the properties file's reloads by result.
func TestWaitsRecoveriesAndReloads(t *testing.T) {
	s := newSetup(t, crlotel.Options{Driver: "pgx"})
	ctx := context.Background()
	require.NoError(t, s.retrier.Do(ctx, "update t", failing(2)))
	tx := 0
	require.NoError(t, s.retrier.DoTx(ctx, func(context.Context) (string, error) {
		if tx++; tx == 1 {
			return "update t", deadlock{}
		}
		return "", nil
	}))
	s.obs.RulesReloaded(core.RulesReloaded{Path: "mssql-jdbc.properties"})
	s.obs.RulesReloaded(core.RulesReloaded{Path: "mssql-jdbc.properties", Line: 2, Err: errors.New("config: bad rule")})
	s.obs.RulesReloaded(core.RulesReloaded{Path: "mssql-jdbc.properties", Err: fmt.Errorf("retryBudget: %w", config.ErrRestartRequired)})
	s.obs.RulesReloaded(core.RulesReloaded{Err: fmt.Errorf("sqlxcrl: the pool: %w", config.ErrForeignPool)})
	rule, ok := s.retrier.Policy().Statement.Lookup(1205)
	require.True(t, ok)
	waits := rule.WaitTimes()

	var rm metricdata.ResourceMetrics
	require.NoError(t, s.reader.Collect(ctx, &rm))
	type hist struct {
		count uint64
		sum   float64
	}
	gotWaits, recovered, reloads := map[string]hist{}, map[string]int64{}, map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch m.Name {
			case "crl.retry.wait":
				assert.Equal(t, "s", m.Unit)
				h, ok := m.Data.(metricdata.Histogram[float64])
				require.True(t, ok)
				for _, dp := range h.DataPoints {
					kind, _ := dp.Attributes.Value(crlotel.KindKey)
					gotWaits[kind.AsString()] = hist{dp.Count, dp.Sum}
					assert.Equal(t, []float64{0.01, 0.04, 0.16, 0.64, 2.56, 10.24, 40.96, 163.84}, dp.Bounds, "the Prometheus hook's buckets")
				}
			case "crl.recovered", "crl.properties.reloads":
				sum, ok := m.Data.(metricdata.Sum[int64])
				require.True(t, ok)
				for _, dp := range sum.DataPoints {
					sys, _ := dp.Attributes.Value("db.system.name")
					assert.Equal(t, "postgresql", sys.AsString(), "the handle's attributes")
					if m.Name == "crl.recovered" {
						kind, _ := dp.Attributes.Value(crlotel.KindKey)
						recovered[kind.AsString()] = dp.Value
					} else {
						result, _ := dp.Attributes.Value(crlotel.ReloadResultKey)
						reloads[result.AsString()] = dp.Value
					}
				}
			}
		}
	}
	assert.Equal(t, map[string]hist{
		"statement":   {2, (waits[0] + waits[1]).Seconds()},
		"transaction": {1, waits[0].Seconds()},
	}, gotWaits)
	assert.Equal(t, map[string]int64{"statement": 1, "transaction": 1}, recovered)
	assert.Equal(t, map[string]int64{"ok": 1, "error": 1, "restart_required": 1, "not_retried": 1}, reloads)
}

func TestConnectionRetriesAndGiveUpWithoutRetry(t *testing.T) {
	s := newSetup(t, crlotel.Options{})
	logins := 0
	require.NoError(t, s.retrier.Connect(context.Background(), func(context.Context) error {
		if logins++; logins == 1 {
			return unavailable{}
		}
		return nil
	}))
	// A GaveUp that no retry preceded (the breaker, the budget): a span of
	// its own, for that moment.
	s.obs.GaveUp(core.GaveUp{Context: context.Background(), Op: 7, Kind: core.KindStatement,
		Reason: core.ErrRetryBudgetExceeded, Err: errors.New("boom")})
	ended := s.spans.Ended()
	require.Len(t, ended, 2)
	assert.Equal(t, "crl.retry connection", ended[0].Name())
	assert.Equal(t, "40613", attrs(ended[0].Events()[0].Attributes)["error.type"].AsString())
	assert.Equal(t, "budget", attrs(ended[1].Attributes())["crl.give_up.reason"].AsString())
	assert.Equal(t, "_OTHER", attrs(ended[1].Attributes())["error.type"].AsString(), "an error of no known class: _OTHER, not its Go type")
	assert.Equal(t, codes.Error, ended[1].Status().Code)
}

// unavailable is the login error of an Azure SQL database that is not
// available yet (40613), which the connection loop retries.
type unavailable struct{}

func (unavailable) Error() string         { return "mssql: Database 'orders' is not currently available" }
func (unavailable) SQLErrorNumber() int32 { return 40613 }

func TestMaxOpenSpans(t *testing.T) {
	_, err := crlotel.New(crlotel.Options{MaxOpenSpans: -1})
	require.ErrorContains(t, err, "MaxOpenSpans -1")
	s := newSetup(t, crlotel.Options{MaxOpenSpans: 1})
	ctx := context.Background()
	// Two operations whose end never comes (a panic in the caller's
	// function, say): only the first gets a span.
	s.obs.RetryScheduled(core.RetryScheduled{Context: ctx, Op: 1, Attempt: 1, Err: deadlock{}})
	s.obs.RetryScheduled(core.RetryScheduled{Context: ctx, Op: 2, Attempt: 1, Err: deadlock{}})
	s.obs.Succeeded(core.Succeeded{Context: ctx, Op: 2, Attempts: 2})
	assert.Empty(t, s.spans.Ended())
	s.obs.Succeeded(core.Succeeded{Context: ctx, Op: 1, Attempts: 2})
	assert.Len(t, s.spans.Ended(), 1)
	require.NoError(t, s.retrier.Do(ctx, "update t", failing(1)))
	assert.Len(t, s.spans.Ended(), 2, "the slot is free again")
}

// BenchmarkDoSuccess is the success path of the statement loop with the
// hook off (no observer) and on: both allocate nothing; on costs one
// atomic add and the clock read that Succeeded.Elapsed needs.
func BenchmarkDoSuccess(b *testing.B) {
	obs, err := crlotel.New(crlotel.Options{
		TracerProvider: sdktrace.NewTracerProvider(),
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())),
	})
	require.NoError(b, err)
	coretest.BenchmarkSuccessObserved(b, coretest.ObserverCase{Name: "hook-off"}, coretest.ObserverCase{Name: "hook-on", Observer: obs})
}

func TestDoSuccessWithTheHookAllocatesNothing(t *testing.T) {
	s := newSetup(t, crlotel.Options{})
	ctx := context.Background()
	stmt := func(context.Context) error { return nil }
	allocs := testing.AllocsPerRun(1000, func() { _ = s.retrier.Do(ctx, "select 1", stmt) })
	assert.Zero(t, allocs)
}

// The span of a unit crl re-runs carries crl.unit.attempt, crl.Attempt of
// the event's context: 1 on the retry's event after run 1, 2 on the span
// that run 2's success ends; and so do the events on a caller's span. A
// statement retried on its own, in no unit, has none.
func TestSpanUnitAttempt(t *testing.T) {
	const update = "UPDATE accounts SET balance = balance - 10 WHERE id = 1"
	s := newSetup(t, crlotel.Options{Driver: "sqlserver"})
	srv := mssqltest.NewServer(t)
	db, err := crl.Open("sqlserver", srv.DSN()+"&retryExec={1205:3,1}", config.WithClock(s.clock), config.WithObserver(s.obs))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, db.Close()) })
	unit := func(ctx context.Context) error {
		srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
		return crl.Retry(ctx, func(ctx context.Context) error {
			_, err := db.ExecContext(ctx, update)
			return err
		})
	}

	require.NoError(t, unit(context.Background()))
	ended := s.spans.Ended()
	require.Len(t, ended, 1)
	assert.Equal(t, "crl.retry transaction", ended[0].Name())
	assert.EqualValues(t, 2, attrs(ended[0].Attributes())[crlotel.UnitAttemptKey].AsInt64(), "the span, ended by run 2's success")
	require.Len(t, ended[0].Events(), 1)
	assert.EqualValues(t, 1, attrs(ended[0].Events()[0].Attributes)[crlotel.UnitAttemptKey].AsInt64(), "the retry after run 1")

	ctx, span := s.tp.Tracer("app").Start(context.Background(), "transfer")
	require.NoError(t, unit(ctx))
	span.End()
	ended = s.spans.Ended()
	require.Len(t, ended, 2)
	var got []int64
	for _, e := range ended[1].Events() {
		got = append(got, attrs(e.Attributes)[crlotel.UnitAttemptKey].AsInt64())
	}
	assert.Equal(t, []int64{1, 2}, got, "crl.retry and crl.succeeded on the caller's span")

	srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
	_, err = db.Exec(update)
	require.NoError(t, err)
	ended = s.spans.Ended()
	require.Len(t, ended, 3)
	_, has := attrs(ended[2].Attributes())[crlotel.UnitAttemptKey]
	assert.False(t, has, "a statement in no unit")
}

// A transaction replay adds crl.tx_replay to the caller's span, with its
// outcome: replayed when the replay was equal, diverged when it stopped.
func TestTxReplayEventOnTheCallersSpan(t *testing.T) {
	s := newSetup(t, crlotel.Options{})
	ctx, span := s.tp.Tracer("app").Start(context.Background(), "checkout")
	s.obs.Succeeded(core.Succeeded{Context: ctx, Kind: core.KindTransaction, Attempts: 2, Replay: true})
	s.obs.GaveUp(core.GaveUp{Context: ctx, Kind: core.KindTransaction, Attempts: 2, Replay: true,
		Reason: core.ErrReplayDiverged, Detail: "diverged", Err: deadlock{}})
	span.End()
	var outcomes []string
	for _, sp := range s.spans.Ended() {
		if sp.Name() != "checkout" {
			continue
		}
		for _, ev := range sp.Events() {
			if ev.Name == "crl.tx_replay" {
				outcomes = append(outcomes, attrs(ev.Attributes)["crl.replay.outcome"].AsString())
			}
		}
	}
	assert.Equal(t, []string{"replayed", "diverged"}, outcomes)
}
