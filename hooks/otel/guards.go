package otel

import (
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// BudgetClassKey is the attribute of crl.budget.available and
// crl.budget.capacity: the budget's class of failures (transient,
// contention, overload: core.Budget.Classes).
const BudgetClassKey = attribute.Key("crl.budget.class")

// BreakerStateKey is the attribute of crl.breaker.status: a state of the
// breaker (closed, open, half_open: core.Breaker.States).
const BreakerStateKey = attribute.Key("crl.breaker.state")

// guards are the asynchronous instruments read from the watched budget
// and breaker when the meter collects.
type guards struct {
	available, capacity metric.Float64ObservableGauge
	status              metric.Int64ObservableGauge
	opens, probes       metric.Int64ObservableCounter
}

func newGuards(meter metric.Meter) (guards, error) {
	var g guards
	var err error
	if g.available, err = meter.Float64ObservableGauge("crl.budget.available", metric.WithUnit("{token}"),
		metric.WithDescription("Tokens the retry budget lets the retries of a class of failures spend now; a retry is refused below its class's cost. Transient and overload share one bucket.")); err != nil {
		return g, fmt.Errorf("otel: gauge crl.budget.available: %w", err)
	}
	if g.capacity, err = meter.Float64ObservableGauge("crl.budget.capacity", metric.WithUnit("{token}"),
		metric.WithDescription("The most the retries of a class of failures may spend, when the retry budget is full.")); err != nil {
		return g, fmt.Errorf("otel: gauge crl.budget.capacity: %w", err)
	}
	if g.status, err = meter.Int64ObservableGauge("crl.breaker.status", metric.WithUnit("{state}"),
		metric.WithDescription("1 for the circuit breaker's state now (closed, open, half_open), 0 for the others; a breaker that is off is closed.")); err != nil {
		return g, fmt.Errorf("otel: gauge crl.breaker.status: %w", err)
	}
	if g.opens, err = meter.Int64ObservableCounter("crl.breaker.opens", metric.WithUnit("{opening}"),
		metric.WithDescription("Times the circuit breaker opened: Failures operations in a row failed, or a probe failed.")); err != nil {
		return g, fmt.Errorf("otel: counter crl.breaker.opens: %w", err)
	}
	if g.probes, err = meter.Int64ObservableCounter("crl.breaker.probes", metric.WithUnit("{probe}"),
		metric.WithDescription("Probe operations the circuit breaker let through, half-open, after OpenFor.")); err != nil {
		return g, fmt.Errorf("otel: counter crl.breaker.probes: %w", err)
	}
	return g, nil
}

func (g guards) observables() []metric.Observable {
	return []metric.Observable{g.available, g.capacity, g.status, g.opens, g.probes}
}

// observeGuards reads the watched budget and breaker: one atomic load of
// theirs for each value, no lock, nothing written.
func (o *Observer) observeGuards(m metric.Observer) {
	g := o.guards
	if b := o.budget.Load(); b != nil {
		for _, class := range b.Classes() {
			available, capacity := b.Tokens(class)
			set := o.withBase(BudgetClassKey.String(class))
			m.ObserveFloat64(g.available, available, set)
			m.ObserveFloat64(g.capacity, capacity, set)
		}
	}
	br := o.breaker.Load() // nil (off) reads as closed, no transitions
	now := br.State()
	for _, state := range br.States() {
		v := int64(0)
		if state == now {
			v = 1
		}
		m.ObserveInt64(g.status, v, o.withBase(BreakerStateKey.String(state)))
	}
	base := metric.WithAttributeSet(attribute.NewSet(o.base...))
	m.ObserveInt64(g.opens, int64(br.Opens()), base)
	m.ObserveInt64(g.probes, int64(br.Probes()), base)
}

// withBase is the observation option of the common attributes and kv.
func (o *Observer) withBase(kv attribute.KeyValue) metric.MeasurementOption {
	a := make([]attribute.KeyValue, 0, len(o.base)+1)
	return metric.WithAttributeSet(attribute.NewSet(append(append(a, o.base...), kv)...))
}
