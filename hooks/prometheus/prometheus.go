// Package prometheus exports the retry engine's events as Prometheus
// metrics, under the names of the MySQL retry-storm post-mortem, so that
// its alert works as written:
//
//	database_retry_requests_total / database_total_requests_total > 0.05
//
// One Metrics is a core.Observer that counts operations; give it to
// a database handle with config.WithObserver (sqlxcrl.Option and
// gormcrl.Option are config.Option) and register it once:
//
//	metrics, err := crlprom.New(prometheus.DefaultRegisterer, crlprom.Options{})
//	db, err := sqlxcrl.Open("sqlserver", dsn, config.WithObserver(metrics))
//
// This package is a module of its own (github.com/crl-go/crl/hooks/prometheus),
// so that the crl module requires no metrics library.
//
// Metrics:
//
//	database_total_requests_total{kind}       operations run: statements, transaction units, connections
//	database_retry_requests_total{kind}       retries scheduled (one per retry, all loops)
//	crl_retries_total{kind,token}             the same retries, by the error token whose rule fired
//	crl_retry_wait_seconds{kind}              the waits before retries (histogram)
//	crl_give_ups_total{kind,reason}           errors returned after a retryable failure, and circuit-open refusals
//	crl_recovered_total{kind}                 operations that succeeded after retries
//	crl_properties_reloads_total{result}      properties-file reloads, result ok, error or restart_required; not_retried: a handle built over a pool crl did not open
//	crl_operation_duration_seconds{kind,outcome}  every operation crl ran, from its start to its end, retries and waits included (histogram)
//	crl_breaker_open                          1 while the watched circuit breaker is open or half-open, else 0 (WatchBreaker)
//	crl_breaker_state{state}                  1 for the watched breaker's state now (closed, open, half_open), 0 for the others
//	crl_breaker_opens_total                   times the watched breaker opened (Failures in a row, or a failed probe)
//	crl_breaker_probes_total                  probe operations the watched breaker let through, half-open
//	crl_budget_available_tokens{class}        tokens the watched retry budget lets class's retries spend now (WatchBudget)
//	crl_budget_capacity_tokens{class}         the most they may spend, when the budget is full
//
// kind is statement, transaction or connection; reason is one of
// hooks.Reasons; outcome is one of Outcomes; class is one of the budget's
// classes (transient, contention, overload: core.Budget.Classes), state
// one of the breaker's (core.Breaker.States). Options.Namespace prefixes
// the crl_ names (Namespace "shop": shop_crl_retries_total), never the
// two database_ names. The two database_ counters have the same labels (kind,
// and Options.ConstLabels) so that dividing one by the other matches
// series one to one; the token breakdown is crl_retries_total's. No label
// holds statement text or an error message: the cardinality is bounded by
// the three kinds, the reasons and the tokens the rules name.
//
// Every series whose labels are known up front is created at 0 when Metrics
// is built, so that rate() and increase() see the first event: both
// database_ counters, crl_recovered_total and the wait histogram for each
// kind, crl_give_ups_total for each reason a kind can give up with,
// crl_properties_reloads_total for each hooks.ReloadResults, crl_retries_total for
// Options.Tokens, the duration histogram for each kind and outcome, and
// the breaker's series (a breaker that is off, or not watched yet, is
// closed and has counted nothing). The budget's series appear once
// WatchBudget is given a budget: a budget that is off has no level.
//
// On the success path the hook costs one atomic add, two clock reads and
// one histogram observation, and allocates nothing (BenchmarkDoSuccess in
// this package). The budget's and the breaker's series are read from them
// at each scrape, one atomic load each, so the success path pays nothing
// for them.
//
// alerts.yml and dashboard.json beside this file are the rules and the
// Grafana board for these names; docs/operations.md says how to load them.
package prometheus

import (
	"fmt"
	"sync/atomic"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/hooks"
)

// Options configures Metrics. The zero value is valid.
type Options struct {
	// Namespace prefixes the names of the crl_ metrics: "shop" makes
	// crl_retries_total shop_crl_retries_total. Empty means no prefix. The
	// two database_ metrics keep their names whatever it is: the
	// post-mortem's alert names them.
	Namespace string
	// ConstLabels are added to every metric, for example {"db": "orders"}
	// when several databases share a registry. Nil means none.
	ConstLabels prom.Labels
	// WaitBuckets are the histogram buckets of the waits, in seconds. Nil
	// means 0.01 s to about 164 s in powers of 4.
	WaitBuckets []float64
	// DurationBuckets are the histogram buckets of the operations'
	// durations, in seconds. Nil means DurationBuckets(), those of the
	// OpenTelemetry conventions' db.client.operation.duration.
	DurationBuckets []float64
	// Tokens are the error tokens whose crl_retries_total series (for
	// statements and transactions) are created at 0, normally the tokens
	// your retryExec rules name. Nil means DefaultTokens; an empty non-nil
	// slice means none. Series of other tokens appear at their first retry.
	Tokens []string
}

// DefaultTokens are the tokens whose series are created when
// Options.Tokens is nil: the deadlock victims of SQL Server (1205), MySQL
// (1213) and PostgreSQL (40P01), which the shipped alerts.yml watches.
func DefaultTokens() []string { return []string{"1205", "1213", "40P01"} }

// DurationBuckets are the default buckets (seconds) of
// crl_operation_duration_seconds: those the OpenTelemetry semantic
// conventions give db.client.operation.duration.
func DurationBuckets() []float64 { return []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10} }

// Outcomes are the values of the outcome label of
// crl_operation_duration_seconds: success (the first attempt succeeded),
// recovered (it succeeded after retries), error (the first attempt failed
// with an error no rule retries), gave_up (an error returned after a
// retryable failure), panic (a panic or runtime.Goexit ended it).
func Outcomes() []string { return []string{"success", "recovered", "error", "gave_up", "panic"} }

const (
	outcomeSuccess = iota
	outcomeRecovered
	outcomeError
	outcomeGaveUp
	outcomePanic
)

// outcome is the index in Outcomes of how e ended. An operation that
// emitted another event carries its Op: it retried or gave up.
func outcome(e core.OperationEnded) int {
	switch {
	case e.Panicked:
		return outcomePanic
	case e.Err == nil && e.Op == 0:
		return outcomeSuccess
	case e.Err == nil:
		return outcomeRecovered
	case e.Op == 0:
		return outcomeError
	}
	return outcomeGaveUp
}

// Metrics is a core.Observer that counts the events. Safe for concurrent use.
type Metrics struct {
	core.NopObserver                 // RetryContext: the retries keep the caller's context
	total            [3]prom.Counter // by core.Kind, resolved once: Operation is one atomic add
	retryReqs        [3]prom.Counter
	totalVec         *prom.CounterVec
	retryVec         *prom.CounterVec
	retries          *prom.CounterVec
	waits            *prom.HistogramVec
	giveUps          *prom.CounterVec
	recovered        *prom.CounterVec
	reloads          *prom.CounterVec
	replays          *prom.CounterVec
	durations        *prom.HistogramVec
	duration         [3][5]prom.Observer // by core.Kind and outcome, resolved once
	breaker          prom.GaugeFunc
	watched          atomic.Pointer[core.Breaker]
	watchedBudget    atomic.Pointer[core.Budget]
	guards           guardDescs
}

// guardDescs describe the series read from the budget and the breaker at
// each scrape.
type guardDescs struct {
	budgetAvailable, budgetCapacity           *prom.Desc
	breakerState, breakerOpens, breakerProbes *prom.Desc
}

func newGuardDescs(ns string, labels prom.Labels) guardDescs {
	name := func(n string) string { return prom.BuildFQName(ns, "crl", n) }
	return guardDescs{
		budgetAvailable: prom.NewDesc(name("budget_available_tokens"),
			"Tokens the retry budget lets the retries of a class of failures spend now; a retry is refused below its class's cost (1 transient, 2 overload, 0.1 contention by default). Transient and overload share one bucket.",
			[]string{"class"}, labels),
		budgetCapacity: prom.NewDesc(name("budget_capacity_tokens"),
			"The most the retries of a class of failures may spend, when the retry budget is full.",
			[]string{"class"}, labels),
		breakerState: prom.NewDesc(name("breaker_state"),
			"1 for the circuit breaker's state now (closed, open, half_open), 0 for the others; a breaker that is off is closed.",
			[]string{"state"}, labels),
		breakerOpens: prom.NewDesc(name("breaker_opens_total"),
			"Times the circuit breaker opened: Failures operations in a row failed, or a probe failed.", nil, labels),
		breakerProbes: prom.NewDesc(name("breaker_probes_total"),
			"Probe operations the circuit breaker let through, half-open, after OpenFor.", nil, labels),
	}
}

var (
	_ core.Observer  = (*Metrics)(nil)
	_ prom.Collector = (*Metrics)(nil)
)

var kinds = [...]core.Kind{core.KindStatement, core.KindTransaction, core.KindConnection}

// giveUpReasons are the reasons each kind of loop can give up with, whose
// series are created at 0.
func giveUpReasons(k core.Kind) []string {
	switch k {
	case core.KindConnection:
		return []string{"exhausted", "budget", "deadline", "not_retryable", "login_timeout"}
	case core.KindTransaction:
		return []string{"exhausted", "query_timeout", "budget", "deadline", "not_retryable", "circuit_open", "commit_unknown", "diverged"}
	}
	return []string{"exhausted", "query_timeout", "budget", "deadline", "not_retryable", "circuit_open", "batch"}
}

// New returns Metrics and registers them with reg (nil means do not
// register; register the returned Metrics, a prom.Collector, yourself).
func New(reg prom.Registerer, o Options) (*Metrics, error) {
	ns, sub := o.Namespace, "crl"
	buckets := o.WaitBuckets
	if buckets == nil {
		buckets = prom.ExponentialBuckets(0.01, 4, 8)
	}
	durationBuckets := o.DurationBuckets
	if durationBuckets == nil {
		durationBuckets = DurationBuckets()
	}
	tokens := o.Tokens
	if tokens == nil {
		tokens = DefaultTokens()
	}
	m := &Metrics{
		totalVec: prom.NewCounterVec(prom.CounterOpts{Name: "database_total_requests_total", ConstLabels: o.ConstLabels,
			Help: "Database operations run through crl: statements, transaction units, connections (however many attempts each took)."}, []string{"kind"}),
		retryVec: prom.NewCounterVec(prom.CounterOpts{Name: "database_retry_requests_total", ConstLabels: o.ConstLabels,
			Help: "Retries scheduled by crl, one per retry, by loop kind."}, []string{"kind"}),
		retries: prom.NewCounterVec(prom.CounterOpts{Namespace: ns, Subsystem: sub, Name: "retries_total", ConstLabels: o.ConstLabels,
			Help: "Retries scheduled, by loop kind and the error token whose rule fired."}, []string{"kind", "token"}),
		waits: prom.NewHistogramVec(prom.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "retry_wait_seconds", ConstLabels: o.ConstLabels, Buckets: buckets,
			Help: "Waits before retries, jitter applied."}, []string{"kind"}),
		giveUps: prom.NewCounterVec(prom.CounterOpts{Namespace: ns, Subsystem: sub, Name: "give_ups_total", ConstLabels: o.ConstLabels,
			Help: "Errors returned after a retryable failure, and operations the circuit breaker refused, by loop kind and reason."}, []string{"kind", "reason"}),
		recovered: prom.NewCounterVec(prom.CounterOpts{Namespace: ns, Subsystem: sub, Name: "recovered_total", ConstLabels: o.ConstLabels,
			Help: "Operations that succeeded after at least one retry."}, []string{"kind"}),
		reloads: prom.NewCounterVec(prom.CounterOpts{Namespace: ns, Subsystem: sub, Name: "properties_reloads_total", ConstLabels: o.ConstLabels,
			Help: "Reloads of the properties file, by result (ok, error, restart_required), and handles built over a pool crl did not open (not_retried)."}, []string{"result"}),
		replays: prom.NewCounterVec(prom.CounterOpts{Namespace: ns, Subsystem: sub, Name: "tx_replays_total", ConstLabels: o.ConstLabels,
			Help: "Transaction replays of the driver layer, by outcome (replayed, diverged, gave_up, skipped) and reason (the stop code, or why the rules gave up)."}, []string{"outcome", "reason"}),
		durations: prom.NewHistogramVec(prom.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "operation_duration_seconds", ConstLabels: o.ConstLabels, Buckets: durationBuckets,
			Help: "Operations crl ran, from their start to their end (retries and waits included), by loop kind and outcome."}, []string{"kind", "outcome"}),
	}
	m.guards = newGuardDescs(ns, o.ConstLabels)
	m.breaker = prom.NewGaugeFunc(prom.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "breaker_open", ConstLabels: o.ConstLabels,
		Help: "1 while the circuit breaker is open or half-open (refusing operations), else 0; 0 when none is watched."}, m.breakerOpen)
	m.initSeries(tokens)
	if reg != nil {
		if err := reg.Register(m); err != nil {
			return nil, fmt.Errorf("prometheus: register crl metrics: %w", err)
		}
	}
	return m, nil
}

// initSeries resolves the per-kind series that Operation and
// OperationEnded use, and creates every series a dashboard or an alert
// reads at zero, so that a rate is defined before the first event.
func (m *Metrics) initSeries(tokens []string) {
	for _, k := range kinds {
		kind := k.String()
		m.total[k] = m.totalVec.WithLabelValues(kind)
		m.retryReqs[k] = m.retryVec.WithLabelValues(kind)
		m.waits.WithLabelValues(kind)
		m.recovered.WithLabelValues(kind)
		for i, out := range Outcomes() {
			m.duration[k][i] = m.durations.WithLabelValues(kind, out)
		}
		for _, reason := range giveUpReasons(k) {
			m.giveUps.WithLabelValues(kind, reason)
		}
		if k != core.KindConnection { // connection retries carry no token
			for _, tok := range tokens {
				m.retries.WithLabelValues(kind, tok)
			}
		}
	}
	for _, result := range hooks.ReloadResults() {
		m.reloads.WithLabelValues(result)
	}
	for outcome, reasons := range hooks.ReplayOutcomes() {
		for _, why := range reasons {
			m.replays.WithLabelValues(outcome, why)
		}
	}
}

func (m *Metrics) collectors() []prom.Collector {
	return []prom.Collector{m.totalVec, m.retryVec, m.retries, m.waits, m.giveUps, m.recovered, m.reloads, m.replays, m.durations, m.breaker}
}

// Describe implements prom.Collector.
func (m *Metrics) Describe(ch chan<- *prom.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
	g := m.guards
	for _, d := range []*prom.Desc{g.budgetAvailable, g.budgetCapacity, g.breakerState, g.breakerOpens, g.breakerProbes} {
		ch <- d
	}
}

// Collect implements prom.Collector.
func (m *Metrics) Collect(ch chan<- prom.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
	m.collectGuards(ch)
}

// collectGuards reads the watched budget and breaker: each value is one
// atomic load of theirs, no lock, nothing written.
func (m *Metrics) collectGuards(ch chan<- prom.Metric) {
	g := m.guards
	if b := m.watchedBudget.Load(); b != nil {
		for _, class := range b.Classes() {
			available, capacity := b.Tokens(class)
			ch <- constMetric(g.budgetAvailable, prom.GaugeValue, available, class)
			ch <- constMetric(g.budgetCapacity, prom.GaugeValue, capacity, class)
		}
	}
	br := m.watched.Load() // nil (off) reads as closed, no transitions
	now := br.State()
	for _, state := range br.States() {
		v := 0.0
		if state == now {
			v = 1
		}
		ch <- constMetric(g.breakerState, prom.GaugeValue, v, state)
	}
	ch <- constMetric(g.breakerOpens, prom.CounterValue, float64(br.Opens()))
	ch <- constMetric(g.breakerProbes, prom.CounterValue, float64(br.Probes()))
}

// constMetric is prom.MustNewConstMetric without the panic: a metric whose
// labels do not fit its Desc reports the error at the scrape instead.
func constMetric(d *prom.Desc, t prom.ValueType, v float64, labels ...string) prom.Metric {
	mt, err := prom.NewConstMetric(d, t, v, labels...)
	if err != nil {
		return prom.NewInvalidMetric(d, err)
	}
	return mt
}

// Operation counts one operation in database_total_requests_total: one
// atomic add, no allocation.
func (m *Metrics) Operation(k core.Kind) {
	if int(k) < len(m.total) {
		m.total[k].Inc()
	}
}

// OperationEnded observes the operation's duration by kind and outcome
// (core.Observer): having it, the Metrics are told of every operation's
// end, with its Elapsed.
func (m *Metrics) OperationEnded(e core.OperationEnded) {
	if int(e.Kind) < len(m.duration) {
		m.duration[e.Kind][outcome(e)].Observe(e.Elapsed.Seconds())
	}
}

// WatchBreaker makes crl_breaker_open, crl_breaker_state and the
// breaker's two counters report b, the circuit breaker of the handle
// these Metrics observe (db.Runtime().Breaker() of a sqlxcrl or gormcrl
// handle; nil when the handle has none, and then it reads as closed). The
// handle is built with the Metrics as its observer, so its breaker can
// only be watched after. The counters are b's own since it was made.
func (m *Metrics) WatchBreaker(b *core.Breaker) { m.watched.Store(b) }

// WatchBudget makes crl_budget_available_tokens and
// crl_budget_capacity_tokens report b, the retry budget of the handle
// these Metrics observe (db.Runtime().Retrier().Budget(); nil when the
// handle's budget is off, and then the two have no series). Like the
// breaker, it can only be watched after the handle is built.
func (m *Metrics) WatchBudget(b *core.Budget) { m.watchedBudget.Store(b) }

func (m *Metrics) breakerOpen() float64 {
	if m.watched.Load().Open() { // Open is false on a nil breaker
		return 1
	}
	return 0
}

// RetryScheduled counts a retry and its wait.
func (m *Metrics) RetryScheduled(e core.RetryScheduled) {
	kind := e.Kind.String()
	if int(e.Kind) < len(m.retryReqs) {
		m.retryReqs[e.Kind].Inc()
	}
	if e.Kind != core.KindConnection { // connection retries carry no token
		m.retries.WithLabelValues(kind, e.Token).Inc()
	}
	m.waits.WithLabelValues(kind).Observe(e.Wait.Seconds())
}

// GaveUp counts an error returned after a retryable failure, and a
// transaction replay that stopped or did not run.
func (m *Metrics) GaveUp(e core.GaveUp) {
	if outcome, why, ok := hooks.ReplayOutcome(e.Replay, e.Reason, e.Detail); ok {
		m.replays.WithLabelValues(outcome, why).Inc()
		if outcome == "replayed" || outcome == "skipped" {
			return // the statement's own answer, or no replay ran: no give-up of a loop
		}
	}
	m.giveUps.WithLabelValues(e.Kind.String(), hooks.Reason(e.Reason)).Inc()
}

// Succeeded counts an operation that succeeded after retries, and a
// transaction replay that did.
func (m *Metrics) Succeeded(e core.Succeeded) {
	m.recovered.WithLabelValues(e.Kind.String()).Inc()
	if e.Replay {
		m.replays.WithLabelValues("replayed", "").Inc()
	}
}

// RulesReloaded counts a reload of the properties file: result ok, error
// (the file no longer parses, or is gone: the last good rules stay), or
// restart_required (an edit of a key read only at start, such as
// retryBudget: the other keys were applied, config.ErrRestartRequired);
// and, as not_retried, a handle built over a pool crl did not open
// (config.ErrForeignPool), which the reload-error alert does not count.
func (m *Metrics) RulesReloaded(e core.RulesReloaded) {
	m.reloads.WithLabelValues(hooks.ReloadResult(e.Err)).Inc()
}
