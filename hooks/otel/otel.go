// Package otel reports the retry engine's events to OpenTelemetry: span
// events on the caller's span, or a span per retried operation when the
// caller has none, and the two counters of the post-mortem through a meter.
//
// One Observer is a core.Observer (and a core.OperationObserver); give it
// to a database handle with config.WithObserver:
//
//	obs, err := crlotel.New(crlotel.Options{})
//	defer obs.Close()
//	db, err := sqlxcrl.Open("sqlserver", dsn, config.WithObserver(obs))
//
// This package is a module of its own (github.com/crl-go/crl/hooks/otel),
// so that the crl module requires no OpenTelemetry library.
//
// # Traces
//
// When the operation's context holds a span (trace.SpanFromContext: the
// caller's, sampled or not), each retry is an event "crl.retry" on it, and
// the end of a retried operation an event "crl.succeeded" or
// "crl.gave_up". Without one, the first retry of an operation starts a
// span "crl.retry <kind>" (a child of whatever the context holds, so a
// remote parent is kept), each retry is an event on it, and the span ends
// when the operation succeeds (status unset) or gives up (status Error).
// An operation that gives up without a retry (the budget, the breaker)
// gets a span that starts and ends at that moment. A span holds no more
// than the operation's own events, so one operation is one span whatever
// runs around it.
//
// Attributes follow the OpenTelemetry database semantic conventions:
// db.system.name (Options.DBSystem), db.response.status_code (the error
// number, when the error has one), error.type (the error number, else the
// rule token such as timeout or badconn, else the Go type of the error),
// db.query.text only when Options.QueryText is set; and crl's own under
// crl.*: crl.kind (statement, transaction, connection), crl.operation.id
// (the events' Op), crl.retry.attempt (the attempt that failed, 1-based),
// crl.retry.wait (seconds), crl.retry.token (the token whose rule fired),
// crl.attempts, crl.elapsed (seconds), crl.give_up.reason (hooks.Reason).
//
// # Metrics
//
// Two asynchronous counters, each with the attribute crl.kind:
//
//	database.total.requests  {request}  operations run: statements, transaction units, connections
//	database.retry.requests  {request}  retries scheduled, one per retry
//
// Through the OpenTelemetry Prometheus exporter they are
// database_total_requests_total and database_retry_requests_total, the
// post-mortem's names, so its alert works on them too. The hot path keeps
// its own atomic counters (one atomic add per operation, no allocation, no
// lock: BenchmarkDoSuccess); the meter reads them at collection.
package otel

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/hooks"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/crl-go/crl/hooks/otel"

// Options configures an Observer. The zero value is valid.
type Options struct {
	// TracerProvider makes the spans. Nil means otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider makes the counters. Nil means otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// DBSystem is the db.system.name attribute. Empty means
	// "microsoft.sql_server"; say "mysql" or "postgresql" for those.
	DBSystem string
	// QueryText records the statement text as db.query.text. False (the
	// default) leaves it out: a statement written with literal values
	// instead of parameters would put them in the traces.
	QueryText bool
	// Attributes are added to every span, span event and measurement, for
	// example db.namespace. Nil means none.
	Attributes []attribute.KeyValue
	// MaxOpenSpans bounds the spans of retried operations started for
	// callers without a span and not ended yet (a statement function that
	// panics after a retry never ends its span). Zero means 10,000; past
	// it, such operations get no span.
	MaxOpenSpans int
}

// Observer is a core.Observer that reports the events to OpenTelemetry.
// Safe for concurrent use.
type Observer struct {
	tracer   trace.Tracer
	base     []attribute.KeyValue // db.system.name + Options.Attributes
	query    bool
	maxOpen  int64
	kindSets [3]attribute.Set
	ops      [3]atomic.Int64 // by core.Kind
	retries  [3]atomic.Int64
	reg      metric.Registration
	open     sync.Map // Op → trace.Span, retried operations without a caller span
	nOpen    atomic.Int64
}

var (
	_ core.Observer          = (*Observer)(nil)
	_ core.OperationObserver = (*Observer)(nil)
)

var kinds = [...]core.Kind{core.KindStatement, core.KindTransaction, core.KindConnection}

// KindKey is the attribute that says which loop an event or a count comes
// from: statement, transaction or connection.
const KindKey = attribute.Key("crl.kind")

// New returns an Observer with its counters registered with the meter
// provider; Close unregisters them.
func New(o Options) (*Observer, error) {
	tp, mp := o.TracerProvider, o.MeterProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	system := semconv.DBSystemNameMicrosoftSQLServer
	if o.DBSystem != "" {
		system = semconv.DBSystemNameKey.String(o.DBSystem)
	}
	if o.MaxOpenSpans < 0 {
		return nil, fmt.Errorf("otel: MaxOpenSpans %d: expected 0 (the default) or more", o.MaxOpenSpans)
	}
	maxOpen := int64(o.MaxOpenSpans)
	if maxOpen == 0 {
		maxOpen = 10_000
	}
	obs := &Observer{
		tracer:  tp.Tracer(ScopeName),
		base:    append([]attribute.KeyValue{system}, o.Attributes...),
		query:   o.QueryText,
		maxOpen: maxOpen,
	}
	for _, k := range kinds {
		obs.kindSets[k] = attribute.NewSet(append([]attribute.KeyValue{KindKey.String(k.String())}, obs.base...)...)
	}
	meter := mp.Meter(ScopeName)
	total, err := meter.Int64ObservableCounter("database.total.requests", metric.WithUnit("{request}"),
		metric.WithDescription("Database operations run through crl: statements, transaction units, connections (however many attempts each took)."))
	if err != nil {
		return nil, fmt.Errorf("otel: counter database.total.requests: %w", err)
	}
	retries, err := meter.Int64ObservableCounter("database.retry.requests", metric.WithUnit("{request}"),
		metric.WithDescription("Retries scheduled by crl, one per retry, by loop kind."))
	if err != nil {
		return nil, fmt.Errorf("otel: counter database.retry.requests: %w", err)
	}
	obs.reg, err = meter.RegisterCallback(func(_ context.Context, m metric.Observer) error {
		for _, k := range kinds {
			set := metric.WithAttributeSet(obs.kindSets[k])
			m.ObserveInt64(total, obs.ops[k].Load(), set)
			m.ObserveInt64(retries, obs.retries[k].Load(), set)
		}
		return nil
	}, total, retries)
	if err != nil {
		return nil, fmt.Errorf("otel: register the counters' callback: %w", err)
	}
	return obs, nil
}

// Close unregisters the counters from the meter provider. Spans still open
// stay open.
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
	o.countRetry(e.Kind)
	attrs := o.attrs(e.Kind, e.Op, e.Query,
		attribute.Int("crl.retry.attempt", e.Attempt),
		attribute.Float64("crl.retry.wait", e.Wait.Seconds()))
	if e.Kind == core.KindConnection { // a connection retry carries no token
		attrs = append(attrs, attribute.Float64("crl.elapsed", e.Elapsed.Seconds()))
	} else {
		attrs = append(attrs, attribute.String("crl.retry.token", e.Token))
	}
	attrs = appendError(attrs, e.Err, e.Token)
	o.retry(e.Context, e.Kind, e.Op, attrs)
}

// Succeeded ends the operation's span, or adds an event to the caller's.
func (o *Observer) Succeeded(e core.Succeeded) {
	attrs := o.attrs(e.Kind, e.Op, e.Query,
		attribute.Int("crl.attempts", e.Attempts),
		attribute.Float64("crl.elapsed", e.Elapsed.Seconds()))
	if span := trace.SpanFromContext(e.Context); span.SpanContext().IsValid() {
		span.AddEvent("crl.succeeded", trace.WithAttributes(attrs...))
		return
	}
	if span, ok := o.take(e.Op); ok {
		span.SetAttributes(attrs...)
		span.End()
	}
}

// GaveUp ends the operation's span with an error status, or adds an event
// to the caller's span.
func (o *Observer) GaveUp(e core.GaveUp) {
	reason := hooks.Reason(e.Reason)
	attrs := o.attrs(e.Kind, e.Op, e.Query,
		attribute.Int("crl.attempts", e.Attempts),
		attribute.String("crl.give_up.reason", reason))
	attrs = appendError(attrs, e.Err, "")
	if span := trace.SpanFromContext(e.Context); span.SpanContext().IsValid() {
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

// RulesReloaded does nothing: a reload belongs to no operation.
func (o *Observer) RulesReloaded(core.RulesReloaded) {}

func (o *Observer) countRetry(k core.Kind) {
	if int(k) < len(o.retries) {
		o.retries[k].Add(1)
	}
}

// retry records one retry on the caller's span, or on the operation's own.
func (o *Observer) retry(ctx context.Context, k core.Kind, op uint64, attrs []attribute.KeyValue) {
	if span := trace.SpanFromContext(ctx); span.SpanContext().IsValid() {
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
		trace.WithAttributes(o.base...))
	span.AddEvent("crl.retry", trace.WithAttributes(attrs...))
	o.open.Store(op, span)
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

func (o *Observer) attrs(k core.Kind, op uint64, query string, extra ...attribute.KeyValue) []attribute.KeyValue {
	a := make([]attribute.KeyValue, 0, len(o.base)+len(extra)+5)
	a = append(a, o.base...)
	a = append(a, KindKey.String(k.String()), attribute.String("crl.operation.id", strconv.FormatUint(op, 10)))
	if o.query && query != "" {
		a = append(a, semconv.DBQueryTextKey.String(query))
	}
	return append(a, extra...)
}

// appendError adds db.response.status_code and error.type for err.
func appendError(a []attribute.KeyValue, err error, token string) []attribute.KeyValue {
	if err == nil {
		return a
	}
	if n, ok := core.ErrorNumber(err); ok {
		code := strconv.FormatInt(int64(n), 10)
		return append(a, semconv.DBResponseStatusCodeKey.String(code), semconv.ErrorTypeKey.String(code))
	}
	switch {
	case token != "":
		return append(a, semconv.ErrorTypeKey.String(token))
	case errors.Is(err, context.DeadlineExceeded):
		return append(a, semconv.ErrorTypeKey.String("timeout"))
	}
	return append(a, semconv.ErrorTypeKey.String(fmt.Sprintf("%T", err)))
}

func spanName(k core.Kind) string { return "crl.retry " + k.String() }

func ctxOf(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}
