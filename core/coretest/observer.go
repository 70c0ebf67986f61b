package coretest

import (
	"sync"

	"github.com/crl-go/crl/core"
)

// Observer records every event it receives. Safe for concurrent use.
type Observer struct {
	mu        sync.Mutex
	Retries   []core.RetryScheduled
	GiveUps   []core.GaveUp
	Successes []core.Succeeded
	Conns     []core.ConnectionRetry
	Reloads   []core.RulesReloaded
}

var _ core.Observer = (*Observer)(nil)

// RetryScheduled records e.
func (o *Observer) RetryScheduled(e core.RetryScheduled) { o.locked(func() { o.Retries = append(o.Retries, e) }) }

// GaveUp records e.
func (o *Observer) GaveUp(e core.GaveUp) { o.locked(func() { o.GiveUps = append(o.GiveUps, e) }) }

// Succeeded records e.
func (o *Observer) Succeeded(e core.Succeeded) {
	o.locked(func() { o.Successes = append(o.Successes, e) })
}

// ConnectionRetry records e.
func (o *Observer) ConnectionRetry(e core.ConnectionRetry) { o.locked(func() { o.Conns = append(o.Conns, e) }) }

// RulesReloaded records e.
func (o *Observer) RulesReloaded(e core.RulesReloaded) { o.locked(func() { o.Reloads = append(o.Reloads, e) }) }

// Snapshot returns a copy of what was recorded, safe to read.
func (o *Observer) Snapshot() Observer {
	o.mu.Lock()
	defer o.mu.Unlock()
	return Observer{
		Retries:   append([]core.RetryScheduled(nil), o.Retries...),
		GiveUps:   append([]core.GaveUp(nil), o.GiveUps...),
		Successes: append([]core.Succeeded(nil), o.Successes...),
		Conns:     append([]core.ConnectionRetry(nil), o.Conns...),
		Reloads:   append([]core.RulesReloaded(nil), o.Reloads...),
	}
}

func (o *Observer) locked(f func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	f()
}
