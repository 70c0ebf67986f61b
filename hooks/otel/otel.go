// Package otel reports the retry engine's events to OpenTelemetry, after
// the OpenTelemetry semantic conventions for database clients (semconv
// v1.43.0): span events on the caller's span, or a span per retried
// operation when the caller has none; the db.client.operation.duration
// histogram of every operation crl ran; counters of retries and give-ups
// by error type and reason; and the two counters of the post-mortem.
//
// One Observer serves one database handle (a core.Observer); give it the handle's
// driver name and DSN, so that its attributes say which database it is,
// and hand it to the handle with config.WithObserver:
//
//	obs, err := crlotel.New(crlotel.Options{Driver: "pgx", DSN: dsn})
//	defer obs.Close()
//	db, err := sqlxcrl.Open("pgx", dsn, config.WithObserver(obs))
//
// This package is a module of its own (github.com/crl-go/crl/hooks/otel),
// so that the crl module requires no OpenTelemetry library.
//
// # Attributes
//
// Every span, span event and measurement carries db.system.name (from
// Options.Driver: microsoft.sql_server, mysql, postgresql; Options.DBSystem
// overrides it, say mariadb for MariaDB, which the MySQL driver serves
// too), db.namespace, server.address and server.port where Options.DSN
// says them, crl.kind (statement, transaction, connection) and
// Options.Attributes. A statement carries db.operation.name, its first
// keyword (SELECT, UPDATE...) when it is a known SQL verb. An error adds
// db.response.status_code, the code the database sent, as the conventions
// name it for each system: SQL Server's error number, MySQL's and
// MariaDB's error number, PostgreSQL's SQLSTATE (40P01); none for an error
// the database did not send. And error.type, a bounded set of values:
// the status code when there is one; else the token of the rule that
// fired (timeout, badconn, a socket number such as 10054); else timeout,
// canceled, badconn, the Windows socket number of another network
// failure (10061, refused), circuit_open for an operation the circuit
// breaker refused, panic for a panic, and _OTHER for anything else. Never
// a Go type name nor an error message: error.type labels the metrics too.
// db.query.text only when Options.QueryText is set. crl's own, on spans
// and span events: crl.operation.id (the events' Op), crl.retry.attempt
// (the attempt that failed, 1-based), crl.retry.wait (seconds),
// crl.retry.token (the token whose rule fired), crl.attempts, crl.elapsed
// (seconds), crl.give_up.reason (hooks.Reason), and crl.unit.attempt
// (UnitAttemptKey: which run of a unit crl re-runs, crl.Attempt of the
// event's context) where the context carries one.
//
// # Traces
//
// When the operation's context holds a span (trace.SpanFromContext: the
// caller's, sampled or not), each retry is an event "crl.retry" on it, and
// the end of a retried operation an event "crl.succeeded", "crl.gave_up"
// or "crl.panicked". Without one, the first retry of an operation starts a
// span "crl.retry <kind>" (kind client, a child of whatever the context
// holds, so a remote parent is kept), each retry is an event on it, and
// the span ends when the operation succeeds (status unset), gives up
// (status Error) or panics (status Error and an "exception" event naming
// the panic; the panic then goes on). core tells the hook how every
// operation ended (OperationEnded), so no span outlives its operation.
// An operation that gives up without a retry (the budget, the breaker)
// gets a span that starts and ends at that moment.
//
// # Metrics
//
//	db.client.operation.duration  s          every operation crl ran, from its start to its end, retries and waits included (histogram, the conventions' buckets)
//	crl.retries                   {retry}    retries scheduled, with crl.retry.token and error.type
//	crl.retry.wait                s          the waits before retries, jitter applied (histogram)
//	crl.give_ups                  {operation} errors returned after a retryable failure and circuit-open refusals, with crl.give_up.reason and error.type
//	crl.recovered                 {operation} operations that succeeded after at least one retry
//	crl.properties.reloads        {reload}   reloads of the properties file, with crl.reload.result (ok, error, restart_required; not_retried: a handle built over a pool crl did not open)
//	database.total.requests       {request}  operations run: statements, transaction units, connections
//	database.retry.requests       {request}  retries scheduled, one per retry
//	crl.budget.available          {token}    what the watched retry budget lets crl.budget.class's retries spend now (gauge, WatchBudget)
//	crl.budget.capacity           {token}    the most they may spend, when the budget is full (gauge)
//	crl.breaker.status            {state}    1 for the watched circuit breaker's state now (crl.breaker.state closed, open, half_open), 0 for the others (gauge, WatchBreaker)
//	crl.breaker.opens             {opening}  times the watched breaker opened (asynchronous counter)
//	crl.breaker.probes            {probe}    probe operations it let through, half-open (asynchronous counter)
//
// database.total.requests and database.retry.requests are the
// post-mortem's counters under OpenTelemetry names. The conventions
// name no instrument for retries, budgets or breakers, so those carry
// crl's names; they are the Prometheus hook's, metric for metric. The
// budget's and the breaker's are read from them when the meter collects,
// one atomic load each: the success path pays nothing for them. The
// budget's have no data points until WatchBudget is given a budget (one
// that is off has no level); a breaker not watched, or off, reads closed.
// Through the OpenTelemetry Prometheus exporter (v0.69, default
// translation) they become database_requests_total (the exporter drops the
// inner "total") and database_retry_requests_total: for the post-mortem's
// alert as written, use hooks/prometheus. They are kept in atomic counters that the meter reads at collection, so counting an
// operation is one atomic add; its duration is one histogram record with
// a precomputed attribute set (no allocation, TestDoSuccessWithTheHookAllocatesNothing).
package otel

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/dbconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/hooks"
)

// waitBuckets are the bucket boundaries (seconds) of crl.retry.wait: 0.01
// s to about 164 s in powers of 4, as the Prometheus hook's
// crl_retry_wait_seconds.
var waitBuckets = [...]float64{0.01, 0.04, 0.16, 0.64, 2.56, 10.24, 40.96, 163.84}

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/crl-go/crl/hooks/otel"

// DurationBuckets are the bucket boundaries (seconds) of
// db.client.operation.duration, those the conventions specify for it.
func DurationBuckets() []float64 { return []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10} }

// Options configures an Observer. The zero value is valid.
type Options struct {
	// TracerProvider makes the spans. Nil means otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider makes the instruments. Nil means otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// Driver is the database/sql driver name the handle was opened with,
	// whose db.system.name config.SystemName gives: sqlserver, mssql or
	// azuresql (microsoft.sql_server), mysql or mariadb (mysql), pgx,
	// pgx/v5, postgres or postgresql (postgresql). Empty
	// means the hook does not know: db.system.name is other_sql unless
	// DBSystem says it. Another name is an error unless DBSystem is set.
	Driver string
	// DSN is the handle's DSN, in any form crl's adapters take for Driver;
	// the hook reads db.namespace, server.address and server.port from it
	// (what it says of them) and keeps nothing else, credentials
	// included. Empty means none of the three. A DSN that does not parse
	// is an error.
	DSN string
	// DBSystem is the db.system.name attribute, a value of the conventions
	// (semconv.DBSystemName...). Empty means the one of Driver; set
	// "mariadb" for a MariaDB server, which the mysql driver serves too.
	DBSystem string
	// QueryText records the statement text as db.query.text. False (the
	// default) leaves it out: a statement written with literal values
	// instead of parameters would put them in the traces.
	QueryText bool
	// Attributes are added to every span, span event and measurement. Nil
	// means none.
	Attributes []attribute.KeyValue
	// MaxOpenSpans bounds the spans of retried operations started for
	// callers without a span and not ended yet. Zero means 10,000; past
	// it, such operations get no span. Every operation's end ends its
	// span, a panic's included, so it is only reached by that many
	// operations retrying at once.
	MaxOpenSpans int
}

// Observer is a core.Observer that reports the events to OpenTelemetry.
// Safe for concurrent use.
type Observer struct {
	core.NopObserver // OperationEnded is its own: the duration histogram reads Elapsed
	tracer           trace.Tracer
	base             []attribute.KeyValue // db.system.name, the DSN's attributes, Options.Attributes
	query            bool
	maxOpen          int64
	kindSets         [3]attribute.Set
	ops              [3]atomic.Int64 // by core.Kind
	retries          [3]atomic.Int64
	reg              metric.Registration
	open             sync.Map // Op → trace.Span, retried operations without a caller span
	nOpen            atomic.Int64

	duration   metric.Float64Histogram
	retryN     metric.Int64Counter
	giveUpN    metric.Int64Counter
	waitH      metric.Float64Histogram
	recoveredN metric.Int64Counter
	reloadN    metric.Int64Counter
	guards     guards
	budget     atomic.Pointer[core.Budget]
	breaker    atomic.Pointer[core.Breaker]
	succeeded  [3][]metric.RecordOption          // the duration's options of a success without an operation name, by kind
	verbs      [len(verbs)][]metric.RecordOption // of a statement's success, by verb
}

var (
	_ core.Observer = (*Observer)(nil)
)

var kinds = [...]core.Kind{core.KindStatement, core.KindTransaction, core.KindConnection}

// verbs are the statement keywords that become db.operation.name, as
// written here whatever the statement's case: a bounded set, so the
// attribute's cardinality is bounded too.
var verbs = [...]string{"SELECT", "INSERT", "UPDATE", "DELETE", "MERGE", "UPSERT", "REPLACE",
	"EXEC", "EXECUTE", "CALL", "CREATE", "ALTER", "DROP", "TRUNCATE", "GRANT", "REVOKE",
	"BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "SET", "SHOW", "USE", "COPY", "LOCK", "VALUES",
	"EXPLAIN", "ANALYZE", "VACUUM", "DECLARE", "PREPARE", "DO"}

// verbIndex is the index in verbs of query's first keyword, -1 when it is
// none of them. It does not allocate.
func verbIndex(query string) int {
	w := core.FirstKeyword(query) // the keyword as crl's rules read it
	for i, v := range verbs {
		if len(v) == len(w) && strings.EqualFold(v, w) {
			return i
		}
	}
	return -1
}

// KindKey is the attribute that says which loop an event or a count comes
// from: statement, transaction or connection.
const KindKey = attribute.Key("crl.kind")

// New returns an Observer with its instruments made by the meter
// provider; Close unregisters the counters' callback.
func New(o Options) (*Observer, error) {
	tp, mp := o.TracerProvider, o.MeterProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if o.MaxOpenSpans < 0 {
		return nil, fmt.Errorf("otel: MaxOpenSpans %d: expected 0 (the default) or more", o.MaxOpenSpans)
	}
	sys, known := system(o.Driver)
	if !known && o.Driver != "" && o.DBSystem == "" {
		return nil, fmt.Errorf("otel: Driver %q: expected a driver name crl knows (config.SystemName), or DBSystem set", o.Driver)
	}
	driverSys := sys
	if o.DBSystem != "" {
		sys = semconv.DBSystemNameKey.String(o.DBSystem)
	}
	base := []attribute.KeyValue{sys}
	if o.DSN != "" && known {
		ep, err := readDSN(driverSys, o.Driver, o.DSN)
		if err != nil {
			return nil, err
		}
		base = append(base, ep.attributes()...)
	}
	maxOpen := int64(o.MaxOpenSpans)
	if maxOpen == 0 {
		maxOpen = 10_000
	}
	obs := &Observer{
		tracer:  tp.Tracer(ScopeName),
		base:    append(base, o.Attributes...),
		query:   o.QueryText,
		maxOpen: maxOpen,
	}
	for _, k := range kinds {
		obs.kindSets[k] = attribute.NewSet(append([]attribute.KeyValue{KindKey.String(k.String())}, obs.base...)...)
		obs.succeeded[k] = []metric.RecordOption{metric.WithAttributeSet(obs.kindSets[k])}
	}
	for i, v := range verbs {
		set := attribute.NewSet(append([]attribute.KeyValue{KindKey.String(core.KindStatement.String()), semconv.DBOperationName(v)}, obs.base...)...)
		obs.verbs[i] = []metric.RecordOption{metric.WithAttributeSet(set)}
	}
	if err := obs.instruments(mp.Meter(ScopeName)); err != nil {
		return nil, err
	}
	return obs, nil
}

// instruments makes the meter's instruments and registers the callback of
// the asynchronous counters.
func (o *Observer) instruments(meter metric.Meter) error {
	d, err := dbconv.NewClientOperationDuration(meter, metric.WithExplicitBucketBoundaries(DurationBuckets()...))
	if err != nil {
		return fmt.Errorf("otel: histogram %s: %w", d.Name(), err)
	}
	o.duration = d.Inst()
	if o.retryN, err = meter.Int64Counter("crl.retries", metric.WithUnit("{retry}"),
		metric.WithDescription("Retries scheduled by crl, by loop kind, the rule token that fired and the error type.")); err != nil {
		return fmt.Errorf("otel: counter crl.retries: %w", err)
	}
	if o.giveUpN, err = meter.Int64Counter("crl.give_ups", metric.WithUnit("{operation}"),
		metric.WithDescription("Errors crl returned after a retryable failure, and operations the circuit breaker refused, by loop kind, reason and error type.")); err != nil {
		return fmt.Errorf("otel: counter crl.give_ups: %w", err)
	}
	if err := o.eventInstruments(meter); err != nil {
		return err
	}
	if o.guards, err = newGuards(meter); err != nil {
		return err
	}
	total, err := meter.Int64ObservableCounter("database.total.requests", metric.WithUnit("{request}"),
		metric.WithDescription("Database operations run through crl: statements, transaction units, connections (however many attempts each took)."))
	if err != nil {
		return fmt.Errorf("otel: counter database.total.requests: %w", err)
	}
	retries, err := meter.Int64ObservableCounter("database.retry.requests", metric.WithUnit("{request}"),
		metric.WithDescription("Retries scheduled by crl, one per retry, by loop kind."))
	if err != nil {
		return fmt.Errorf("otel: counter database.retry.requests: %w", err)
	}
	o.reg, err = meter.RegisterCallback(func(_ context.Context, m metric.Observer) error {
		for _, k := range kinds {
			set := metric.WithAttributeSet(o.kindSets[k])
			m.ObserveInt64(total, o.ops[k].Load(), set)
			m.ObserveInt64(retries, o.retries[k].Load(), set)
		}
		o.observeGuards(m)
		return nil
	}, append([]metric.Observable{total, retries}, o.guards.observables()...)...)
	if err != nil {
		return fmt.Errorf("otel: register the counters' callback: %w", err)
	}
	return nil
}

// eventInstruments makes the synchronous instruments the events feed
// beside the duration and the retry and give-up counters.
func (o *Observer) eventInstruments(meter metric.Meter) error {
	var err error
	if o.waitH, err = meter.Float64Histogram("crl.retry.wait", metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(waitBuckets[:]...),
		metric.WithDescription("Waits before retries, jitter applied, by loop kind.")); err != nil {
		return fmt.Errorf("otel: histogram crl.retry.wait: %w", err)
	}
	if o.recoveredN, err = meter.Int64Counter("crl.recovered", metric.WithUnit("{operation}"),
		metric.WithDescription("Operations that succeeded after at least one retry, by loop kind.")); err != nil {
		return fmt.Errorf("otel: counter crl.recovered: %w", err)
	}
	if o.reloadN, err = meter.Int64Counter("crl.properties.reloads", metric.WithUnit("{reload}"),
		metric.WithDescription("Reloads of the properties file, by result (ok, error, restart_required), and handles built over a pool crl did not open (not_retried).")); err != nil {
		return fmt.Errorf("otel: counter crl.properties.reloads: %w", err)
	}
	return nil
}

// WatchBudget makes crl.budget.available and crl.budget.capacity report
// b, the retry budget of the handle this Observer observes
// (db.Runtime().Retrier().Budget() of a sqlxcrl handle; nil when its
// budget is off, and then the two have no data points). The handle is
// built with the Observer, so its budget can only be watched after.
func (o *Observer) WatchBudget(b *core.Budget) { o.budget.Store(b) }

// WatchBreaker makes crl.breaker.status, crl.breaker.opens and
// crl.breaker.probes report b, the circuit breaker of the handle this
// Observer observes (db.Runtime().Breaker(); nil when it has none, and
// then it reads as closed). The counters are b's own since it was made.
func (o *Observer) WatchBreaker(b *core.Breaker) { o.breaker.Store(b) }

// Close unregisters the counters' callback from the meter provider. Spans
// still open stay open.
func (o *Observer) Close() error {
	if err := o.reg.Unregister(); err != nil {
		return fmt.Errorf("otel: unregister the counters: %w", err)
	}
	return nil
}

// Operation counts one operation: one atomic add, no allocation.
func (o *Observer) Operation(k core.Kind) {
	if int(k) < len(o.ops) {
		o.ops[k].Add(1)
	}
}

// RetryScheduled counts a retry and records it as a span event.
func (o *Observer) RetryScheduled(e core.RetryScheduled) {
	if int(e.Kind) < len(o.retries) {
		o.retries[e.Kind].Add(1)
		o.waitH.Record(ctxOf(e.Context), e.Wait.Seconds(), metric.WithAttributeSet(o.kindSets[e.Kind]))
	}
	attrs := o.attrs(e.Context, e.Kind, e.Op, e.Query,
		attribute.Int("crl.retry.attempt", e.Attempt),
		attribute.Float64("crl.retry.wait", e.Wait.Seconds()))
	if e.Kind == core.KindConnection { // a connection retry carries no token
		attrs = append(attrs, attribute.Float64("crl.elapsed", e.Elapsed.Seconds()))
	} else {
		attrs = append(attrs, attribute.String("crl.retry.token", e.Token))
	}
	attrs = appendError(attrs, e.Err, e.Token)
	o.retryN.Add(ctxOf(e.Context), 1, metric.WithAttributes(appendError(o.metricAttrs(e.Kind,
		attribute.String("crl.retry.token", e.Token)), e.Err, e.Token)...))
	o.retry(e.Context, e.Kind, e.Op, attrs)
}

// Succeeded counts the recovery and ends the operation's span, or adds
// an event to the caller's.
func (o *Observer) Succeeded(e core.Succeeded) {
	if e.Replay {
		replayEvent(e.Context, "replayed", "", e.Attempts)
	}
	if int(e.Kind) < len(o.kindSets) {
		o.recoveredN.Add(ctxOf(e.Context), 1, metric.WithAttributeSet(o.kindSets[e.Kind]))
	}
	attrs := o.attrs(e.Context, e.Kind, e.Op, e.Query,
		attribute.Int("crl.attempts", e.Attempts),
		attribute.Float64("crl.elapsed", e.Elapsed.Seconds()))
	if span, ok := o.callerSpan(e.Context, e.Op); ok {
		span.AddEvent("crl.succeeded", trace.WithAttributes(attrs...))
		return
	}
	if span, ok := o.take(e.Op); ok {
		span.SetAttributes(attrs...)
		span.End()
	}
}

// replayEvent adds the event crl.tx_replay to the span of ctx (the
// caller's: the statement or COMMIT whose error was replayed) with the
// replay's outcome (hooks.ReplayOutcome), its reason and the attempts.
func replayEvent(ctx context.Context, outcome, reason string, attempts int) {
	trace.SpanFromContext(ctxOf(ctx)).AddEvent("crl.tx_replay", trace.WithAttributes(
		attribute.String("crl.replay.outcome", outcome),
		attribute.String("crl.replay.reason", reason),
		attribute.Int("crl.attempts", attempts)))
}

// GaveUp counts the give-up and ends the operation's span with an error
// status, or adds an event to the caller's span.
func (o *Observer) GaveUp(e core.GaveUp) {
	if outcome, why, ok := hooks.ReplayOutcome(e.Replay, e.Reason, e.Detail); ok {
		replayEvent(e.Context, outcome, why, e.Attempts)
	}
	reason := hooks.Reason(e.Reason)
	o.giveUpN.Add(ctxOf(e.Context), 1, metric.WithAttributes(appendError(o.metricAttrs(e.Kind,
		attribute.String("crl.give_up.reason", reason)), e.Err, "")...))
	attrs := o.attrs(e.Context, e.Kind, e.Op, e.Query,
		attribute.Int("crl.attempts", e.Attempts),
		attribute.String("crl.give_up.reason", reason))
	attrs = appendError(attrs, e.Err, "")
	if span, ok := o.callerSpan(e.Context, e.Op); ok {
		span.AddEvent("crl.gave_up", trace.WithAttributes(attrs...))
		return
	}
	span, ok := o.take(e.Op)
	if !ok { // gave up before any retry: a span of its own, for this moment
		_, span = o.tracer.Start(ctxOf(e.Context), spanName(e.Kind), trace.WithSpanKind(trace.SpanKindClient))
	}
	span.SetAttributes(attrs...)
	span.SetStatus(codes.Error, "crl: gave up ("+reason+")")
	if e.Err != nil {
		span.RecordError(e.Err)
	}
	span.End()
}

// OperationEnded records the operation's duration and ends its span if
// one is still open: with an error status and an exception event when it
// panicked (the panic then goes on, core sees to it).
func (o *Observer) OperationEnded(e core.OperationEnded) {
	o.recordDuration(e)
	if e.Op == 0 && !e.Panicked { // no earlier event: no span of its own, nothing on the caller's
		return
	}
	if !e.Panicked {
		// Succeeded or GaveUp ended the span; one still open (an end those
		// did not tell) ends here, so that none outlives its operation.
		if span, ok := o.take(e.Op); ok {
			if e.Err != nil {
				span.SetAttributes(appendError(nil, e.Err, "")...)
				span.SetStatus(codes.Error, "crl: "+e.Err.Error())
				span.RecordError(e.Err)
			}
			span.End()
		}
		return
	}
	exc := panicAttributes(e.Panic)
	if span, ok := o.callerSpan(e.Context, e.Op); ok {
		span.AddEvent("crl.panicked", trace.WithAttributes(append(o.attrs(e.Context, e.Kind, e.Op, e.Query), exc...)...))
		return
	}
	span, ok := o.take(e.Op)
	if !ok {
		return
	}
	span.SetAttributes(semconv.ErrorTypeKey.String(errorTypePanic))
	span.AddEvent(semconv.ExceptionEventName, trace.WithAttributes(exc...))
	span.SetStatus(codes.Error, "crl: the operation panicked")
	span.End()
}

// panicAttributes are the exception.* attributes of a panic's value (a
// runtime.Goexit has none).
func panicAttributes(v any) []attribute.KeyValue {
	switch v := v.(type) {
	case nil:
		return []attribute.KeyValue{semconv.ExceptionMessage("runtime.Goexit")}
	case error:
		return []attribute.KeyValue{semconv.ExceptionType(fmt.Sprintf("%T", v)), semconv.ExceptionMessage(v.Error())}
	}
	return []attribute.KeyValue{semconv.ExceptionType(fmt.Sprintf("%T", v)), semconv.ExceptionMessage(fmt.Sprint(v))}
}

// recordDuration records db.client.operation.duration: a success with its
// precomputed attribute set, anything else with the error's attributes.
func (o *Observer) recordDuration(e core.OperationEnded) {
	if int(e.Kind) >= len(o.succeeded) {
		return
	}
	ctx, secs := ctxOf(e.Context), e.Elapsed.Seconds()
	verb := -1
	if e.Kind == core.KindStatement {
		verb = verbIndex(e.Query)
	}
	if e.Err == nil && !e.Panicked {
		if verb >= 0 {
			o.duration.Record(ctx, secs, o.verbs[verb]...)
		} else {
			o.duration.Record(ctx, secs, o.succeeded[e.Kind]...)
		}
		return
	}
	var extra []attribute.KeyValue
	if verb >= 0 {
		extra = append(extra, semconv.DBOperationName(verbs[verb]))
	}
	a := o.metricAttrs(e.Kind, extra...)
	if e.Panicked {
		a = append(a, semconv.ErrorTypeKey.String(errorTypePanic))
	} else {
		a = appendError(a, e.Err, "")
	}
	o.duration.Record(ctx, secs, metric.WithAttributes(a...))
}

// metricAttrs are a measurement's attributes: the base, crl.kind and
// extra, with room for the error's (appendError).
func (o *Observer) metricAttrs(k core.Kind, extra ...attribute.KeyValue) []attribute.KeyValue {
	a := make([]attribute.KeyValue, 0, len(o.base)+len(extra)+3)
	a = append(a, o.base...)
	a = append(a, KindKey.String(k.String()))
	return append(a, extra...)
}

// ReloadResultKey is the attribute of crl.properties.reloads: how the
// reload ended (hooks.ReloadResult: ok, error, restart_required;
// not_retried for a handle built over a pool crl did not open).
const ReloadResultKey = attribute.Key("crl.reload.result")

// RulesReloaded counts a reload of the properties file by its result; it
// makes no span: a reload belongs to no operation.
func (o *Observer) RulesReloaded(e core.RulesReloaded) {
	a := make([]attribute.KeyValue, 0, len(o.base)+1)
	a = append(append(a, o.base...), ReloadResultKey.String(hooks.ReloadResult(e.Err)))
	o.reloadN.Add(context.Background(), 1, metric.WithAttributes(a...))
}

// retry records one retry on the caller's span, or on the operation's own.
func (o *Observer) retry(ctx context.Context, k core.Kind, op uint64, attrs []attribute.KeyValue) {
	if span, ok := o.callerSpan(ctx, op); ok {
		span.AddEvent("crl.retry", trace.WithAttributes(attrs...))
		return
	}
	if v, ok := o.open.Load(op); ok {
		v.(trace.Span).AddEvent("crl.retry", trace.WithAttributes(attrs...))
		return
	}
	if o.nOpen.Add(1) > o.maxOpen {
		o.nOpen.Add(-1)
		return
	}
	_, span := o.tracer.Start(ctxOf(ctx), spanName(k), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(o.base...), trace.WithAttributes(KindKey.String(k.String())))
	span.AddEvent("crl.retry", trace.WithAttributes(attrs...))
	o.open.Store(op, span)
}

// RetryContext gives an operation's retried attempts, waits and later
// events the operation's own span (core.Observer.RetryContext), so that the
// driver's spans of those attempts (otelsql's, pgx's tracer) nest under
// crl's retry span. An operation that runs under a caller's span has no
// span of its own, and keeps the caller's context.
func (o *Observer) RetryContext(ctx context.Context, e core.RetryScheduled) context.Context {
	if v, ok := o.open.Load(e.Op); ok {
		return trace.ContextWithSpan(ctx, v.(trace.Span))
	}
	return ctx
}

// callerSpan returns the caller's span in ctx: a valid span that is not
// op's own (RetryContext puts that one in the retries' context).
func (o *Observer) callerSpan(ctx context.Context, op uint64) (trace.Span, bool) {
	span := trace.SpanFromContext(ctx)
	if !span.SpanContext().IsValid() {
		return nil, false
	}
	if v, ok := o.open.Load(op); ok && v.(trace.Span).SpanContext().SpanID() == span.SpanContext().SpanID() {
		return nil, false
	}
	return span, true
}

// take removes and returns the open span of op.
func (o *Observer) take(op uint64) (trace.Span, bool) {
	v, ok := o.open.LoadAndDelete(op)
	if !ok {
		return nil, false
	}
	o.nOpen.Add(-1)
	return v.(trace.Span), true
}

// attrs are the attributes of a span or span event of an operation's
// event: the base ones, its kind, Op and statement, the unit's attempt
// that ctx carries, and extra.
func (o *Observer) attrs(ctx context.Context, k core.Kind, op uint64, query string, extra ...attribute.KeyValue) []attribute.KeyValue {
	a := make([]attribute.KeyValue, 0, len(o.base)+len(extra)+6)
	a = append(a, o.base...)
	a = append(a, KindKey.String(k.String()), attribute.String("crl.operation.id", strconv.FormatUint(op, 10)))
	if k == core.KindStatement {
		if v := verbIndex(query); v >= 0 {
			a = append(a, semconv.DBOperationName(verbs[v]))
		}
	}
	if o.query && query != "" {
		a = append(a, semconv.DBQueryTextKey.String(query))
	}
	if ctx != nil {
		if n := crl.Attempt(ctx); n > 0 {
			a = append(a, UnitAttemptKey.Int(n))
		}
	}
	return append(a, extra...)
}

// UnitAttemptKey is the attribute of a span or span event of a unit that
// crl re-runs (crl.RunInTx, crl.Retry, the adapters' helpers), or of an
// operation run inside one of its runs: crl.Attempt of the event's
// context, 1 for the first run, 2 for the first re-run, …. It is on
// spans and span events only, never on measurements.
const UnitAttemptKey = attribute.Key("crl.unit.attempt")

func spanName(k core.Kind) string { return "crl.retry " + k.String() }

func ctxOf(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}
