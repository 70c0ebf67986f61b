package coretest

import (
	"sync"

	"github.com/crl-go/crl/core"
)

// Events is what an Observer recorded, in order of arrival.
type Events struct {
	Retries   []core.RetryScheduled
	GiveUps   []core.GaveUp
	Successes []core.Succeeded
	Reloads   []core.RulesReloaded
}

// Observer records every event it receives. Safe for concurrent use.
type Observer struct {
	core.NopObserver // Operation, RetryContext and OperationEnded: not recorded
	mu               sync.Mutex
	events           Events
}

var _ core.Observer = (*Observer)(nil)

// RetryScheduled records e.
func (o *Observer) RetryScheduled(e core.RetryScheduled) {
	o.locked(func(ev *Events) { ev.Retries = append(ev.Retries, e) })
}

// GaveUp records e.
func (o *Observer) GaveUp(e core.GaveUp) {
	o.locked(func(ev *Events) { ev.GiveUps = append(ev.GiveUps, e) })
}

// Succeeded records e.
func (o *Observer) Succeeded(e core.Succeeded) {
	o.locked(func(ev *Events) { ev.Successes = append(ev.Successes, e) })
}

// RulesReloaded records e.
func (o *Observer) RulesReloaded(e core.RulesReloaded) {
	o.locked(func(ev *Events) { ev.Reloads = append(ev.Reloads, e) })
}

// Snapshot returns a copy of what was recorded so far.
func (o *Observer) Snapshot() Events {
	o.mu.Lock()
	defer o.mu.Unlock()
	return Events{
		Retries:   append([]core.RetryScheduled(nil), o.events.Retries...),
		GiveUps:   append([]core.GaveUp(nil), o.events.GiveUps...),
		Successes: append([]core.Succeeded(nil), o.events.Successes...),
		Reloads:   append([]core.RulesReloaded(nil), o.events.Reloads...),
	}
}

func (o *Observer) locked(f func(*Events)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	f(&o.events)
}
