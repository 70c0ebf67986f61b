// Package prometheus exports the retry engine's events as Prometheus
// metrics. One Metrics is a core.Observer; give it to a DB with
// sqlxcrl.WithObserver or gormcrl's option, and register it once.
//
// Metrics (the namespace defaults to "crl"):
//
//	crl_retries_total{kind,token}            retries scheduled, by loop and error token
//	crl_retry_wait_seconds{kind}             the waits before retries (histogram)
//	crl_give_ups_total{kind,reason}          errors returned after a retryable failure
//	crl_recovered_total{kind}                operations that succeeded after retries
//	crl_connection_retries_total             connection (login) retries
//	crl_properties_reloads_total{result}     properties-file reloads, result ok or error
//
// kind is statement, transaction or connection; reason is one of
// hooks.Reason's names. The token label takes the error tokens named in
// the rules, so its cardinality is bounded by the rules.
package prometheus

import (
	"fmt"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/hooks"
)

// Options configures Metrics. The zero value is valid.
type Options struct {
	// Namespace prefixes every metric name. Empty means "crl".
	Namespace string
	// ConstLabels are added to every metric, for example {"db": "orders"}
	// when several databases share a registry. Nil means none.
	ConstLabels prom.Labels
	// WaitBuckets are the histogram buckets of the waits, in seconds. Nil
	// means 0.01 s to about 164 s in powers of 4.
	WaitBuckets []float64
}

// Metrics is a core.Observer that counts the events. Safe for concurrent use.
type Metrics struct {
	retries   *prom.CounterVec
	waits     *prom.HistogramVec
	giveUps   *prom.CounterVec
	recovered *prom.CounterVec
	connRetry prom.Counter
	reloads   *prom.CounterVec
}

var (
	_ core.Observer  = (*Metrics)(nil)
	_ prom.Collector = (*Metrics)(nil)
)

// New returns Metrics and registers them with reg (nil means do not
// register; register the returned Metrics, a prom.Collector, yourself).
func New(reg prom.Registerer, o Options) (*Metrics, error) {
	ns := o.Namespace
	if ns == "" {
		ns = "crl"
	}
	buckets := o.WaitBuckets
	if buckets == nil {
		buckets = prom.ExponentialBuckets(0.01, 4, 8)
	}
	m := &Metrics{
		retries: prom.NewCounterVec(prom.CounterOpts{Namespace: ns, Name: "retries_total", ConstLabels: o.ConstLabels,
			Help: "Retries scheduled, by loop kind and the error token whose rule fired."}, []string{"kind", "token"}),
		waits: prom.NewHistogramVec(prom.HistogramOpts{Namespace: ns, Name: "retry_wait_seconds", ConstLabels: o.ConstLabels, Buckets: buckets,
			Help: "Waits before retries, jitter applied."}, []string{"kind"}),
		giveUps: prom.NewCounterVec(prom.CounterOpts{Namespace: ns, Name: "give_ups_total", ConstLabels: o.ConstLabels,
			Help: "Errors returned after a retryable failure, by loop kind and reason."}, []string{"kind", "reason"}),
		recovered: prom.NewCounterVec(prom.CounterOpts{Namespace: ns, Name: "recovered_total", ConstLabels: o.ConstLabels,
			Help: "Operations that succeeded after at least one retry."}, []string{"kind"}),
		connRetry: prom.NewCounter(prom.CounterOpts{Namespace: ns, Name: "connection_retries_total", ConstLabels: o.ConstLabels,
			Help: "Connection (login) retries scheduled."}),
		reloads: prom.NewCounterVec(prom.CounterOpts{Namespace: ns, Name: "properties_reloads_total", ConstLabels: o.ConstLabels,
			Help: "Reloads of the properties file, by result (ok, error)."}, []string{"result"}),
	}
	if reg != nil {
		if err := reg.Register(m); err != nil {
			return nil, fmt.Errorf("prometheus: register crl metrics: %w", err)
		}
	}
	return m, nil
}

func (m *Metrics) collectors() []prom.Collector {
	return []prom.Collector{m.retries, m.waits, m.giveUps, m.recovered, m.connRetry, m.reloads}
}

// Describe implements prom.Collector.
func (m *Metrics) Describe(ch chan<- *prom.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prom.Collector.
func (m *Metrics) Collect(ch chan<- prom.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}

// RetryScheduled counts a retry and its wait.
func (m *Metrics) RetryScheduled(e core.RetryScheduled) {
	kind := e.Kind.String()
	m.retries.WithLabelValues(kind, e.Token).Inc()
	m.waits.WithLabelValues(kind).Observe(e.Wait.Seconds())
}

// GaveUp counts an error returned after a retryable failure.
func (m *Metrics) GaveUp(e core.GaveUp) {
	m.giveUps.WithLabelValues(e.Kind.String(), hooks.Reason(e.Reason)).Inc()
}

// Succeeded counts an operation that succeeded after retries.
func (m *Metrics) Succeeded(e core.Succeeded) { m.recovered.WithLabelValues(e.Kind.String()).Inc() }

// ConnectionRetry counts a connection retry and its wait.
func (m *Metrics) ConnectionRetry(e core.ConnectionRetry) {
	m.connRetry.Inc()
	m.waits.WithLabelValues(core.KindConnection.String()).Observe(e.Wait.Seconds())
}

// RulesReloaded counts a reload of the properties file.
func (m *Metrics) RulesReloaded(e core.RulesReloaded) {
	result := "ok"
	if e.Err != nil {
		result = "error"
	}
	m.reloads.WithLabelValues(result).Inc()
}
