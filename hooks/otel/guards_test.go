package otel_test

import (
	"context"
	"testing"
	"time"

	_ "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	crlotel "github.com/crl-go/crl/hooks/otel"
	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

// guardReading is what one collection says of the budget and the breaker.
type guardReading struct {
	available, capacity map[string]float64 // by class
	status              map[string]int64   // by state
	opens, probes       int64
}

// readGuards collects reader and reads the budget's and the breaker's
// instruments, checking that each data point carries the handle's
// attributes (db.system.name, db.namespace).
func readGuards(t *testing.T, reader *sdkmetric.ManualReader) guardReading {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	g := guardReading{available: map[string]float64{}, capacity: map[string]float64{}, status: map[string]int64{}}
	handle := func(s attribute.Set) {
		sys, _ := s.Value("db.system.name")
		ns, _ := s.Value("db.namespace")
		assert.Equal(t, "microsoft.sql_server", sys.AsString())
		assert.Equal(t, "master", ns.AsString())
	}
	floats := func(m metricdata.Metrics, into map[string]float64) {
		gauge, ok := m.Data.(metricdata.Gauge[float64])
		require.True(t, ok, "%s is a gauge", m.Name)
		for _, dp := range gauge.DataPoints {
			handle(dp.Attributes)
			class, _ := dp.Attributes.Value(crlotel.BudgetClassKey)
			into[class.AsString()] = dp.Value
		}
	}
	counter := func(m metricdata.Metrics) int64 {
		sum, ok := m.Data.(metricdata.Sum[int64])
		require.True(t, ok, "%s is a sum", m.Name)
		require.True(t, sum.IsMonotonic, m.Name)
		require.Len(t, sum.DataPoints, 1, m.Name)
		handle(sum.DataPoints[0].Attributes)
		return sum.DataPoints[0].Value
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch m.Name {
			case "crl.budget.available":
				floats(m, g.available)
			case "crl.budget.capacity":
				floats(m, g.capacity)
			case "crl.breaker.status":
				gauge, ok := m.Data.(metricdata.Gauge[int64])
				require.True(t, ok, "%s is a gauge", m.Name)
				for _, dp := range gauge.DataPoints {
					handle(dp.Attributes)
					state, _ := dp.Attributes.Value(crlotel.BreakerStateKey)
					g.status[state.AsString()] = dp.Value
				}
			case "crl.breaker.opens":
				g.opens = counter(m)
			case "crl.breaker.probes":
				g.probes = counter(m)
			}
		}
	}
	return g
}

// The storm of hooks/prometheus's TestBudgetAndBreakerGaugesThroughAStorm,
// read from an in-memory metric reader: through the real go-mssqldb
// driver and sqlxcrl against mssqltest, on a virtual clock, deadlock
// victims drain the contention pool while the shared bucket stays full;
// the breaker opens after 50 failed operations in a row, one probe goes
// through after OpenFor and its success closes it; successes refill the
// pool.
func TestBudgetAndBreakerGaugesThroughAStorm(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	srv := mssqltest.NewServer(t)
	dsn := srv.DSN() + "&retryExec={1205:2,100ms}" // database=master
	obs, err := crlotel.New(crlotel.Options{Driver: "sqlserver", DSN: dsn,
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	require.NoError(t, err)
	defer obs.Close()
	clock := coretest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	db, err := sqlxcrl.Connect("sqlserver", dsn, config.WithClock(clock), config.WithObserver(obs),
		config.WithCircuitBreaker(core.BreakerSettings{Failures: 50, OpenFor: 30 * time.Second}))
	require.NoError(t, err)
	defer db.Close()
	db.SetMaxOpenConns(1)

	before := readGuards(t, reader)
	assert.Empty(t, before.available, "no budget watched: no level")
	assert.Equal(t, map[string]int64{"closed": 1, "open": 0, "half_open": 0}, before.status)
	obs.WatchBudget(db.Runtime().Retrier().Budget())
	obs.WatchBreaker(db.Runtime().Breaker())

	full := readGuards(t, reader)
	assert.Equal(t, map[string]float64{"transient": 10, "overload": 10, "contention": 12.8}, full.available)
	assert.Equal(t, full.available, full.capacity, "a new budget is full")

	const debit = "UPDATE accounts SET balance = balance - 10 WHERE id = @p1"
	exec := func() error { _, err := db.ExecContext(context.Background(), debit, 1); return err }
	srv.Handle(debit, mssqltest.Error(1205))
	for range 20 {
		require.Error(t, exec())
	}
	mid := readGuards(t, reader)
	assert.InDelta(t, 12.8-20*3*0.1, mid.available["contention"], 1e-9, "each debit's three failures cost 0.1")
	assert.Equal(t, 10.0, mid.available["overload"], "deadlocks cost the shared bucket nothing")
	assert.Equal(t, [2]int64{0, 0}, [2]int64{mid.opens, mid.probes})

	for range 30 {
		require.Error(t, exec())
	}
	storm := readGuards(t, reader)
	assert.Zero(t, storm.available["contention"], "the storm drained the pool")
	assert.Equal(t, 10.0, storm.available["transient"])
	assert.Equal(t, map[string]int64{"closed": 0, "open": 1, "half_open": 0}, storm.status, "50 failures in a row")
	assert.Equal(t, [2]int64{1, 0}, [2]int64{storm.opens, storm.probes})
	require.ErrorIs(t, exec(), core.ErrCircuitOpen)

	srv.Handle(debit, mssqltest.Affected(1))
	clock.Advance(30 * time.Second)
	require.NoError(t, exec(), "the probe")
	probed := readGuards(t, reader)
	assert.Equal(t, map[string]int64{"closed": 1, "open": 0, "half_open": 0}, probed.status, "the probe's success closed it")
	assert.Equal(t, [2]int64{1, 1}, [2]int64{probed.opens, probed.probes})
	assert.InDelta(t, 6.4, probed.available["contention"], 1e-9, "a success refills 64 failures' worth")

	require.NoError(t, exec())
	assert.Equal(t, full.available, readGuards(t, reader).available, "recovered")
}
