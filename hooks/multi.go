package hooks

import (
	"context"

	"github.com/crl-go/crl/core"
)

// Multi returns an observer that hands every event to each of observers,
// in order. Nil observers are skipped; with none left it returns nil, which
// costs nothing, and with one left it returns that one. When a member has
// OperationEnded (and so reads the time of operations, see core.Observer)
// the observer has it too, and hands it to those members only; otherwise
// it has none, and a statement's success path reads no clock for it.
func Multi(observers ...core.Observer) core.Observer {
	var all []core.Observer
	for _, o := range observers {
		if m := asMulti(o); m != nil {
			all = append(all, m.all...)
		} else if o != nil {
			all = append(all, o)
		}
	}
	switch len(all) {
	case 0:
		return nil
	case 1:
		return all[0]
	}
	m := &multi{all: all}
	for _, o := range all {
		if e, ok := o.(ender); ok {
			m.timed = append(m.timed, e)
		}
	}
	if len(m.timed) > 0 {
		return &timedMulti{m}
	}
	return m
}

// ender is an observer that has OperationEnded.
type ender interface{ OperationEnded(core.OperationEnded) }

// multi is the observer Multi returns.
type multi struct {
	all   []core.Observer
	timed []ender // the members that have OperationEnded
}

// timedMulti is the observer Multi returns when a member has
// OperationEnded.
type timedMulti struct{ *multi }

// each calls f with every member, in order.
func (m *multi) each(f func(core.Observer)) {
	for _, o := range m.all {
		f(o)
	}
}

// Operation runs on the success path: a plain loop, no function value.
func (m *multi) Operation(k core.Kind) {
	for _, o := range m.all {
		o.Operation(k)
	}
}

func (m *multi) RetryScheduled(e core.RetryScheduled) {
	m.each(func(o core.Observer) { o.RetryScheduled(e) })
}

// RetryContext hands the context of an operation's retries through every
// member, in order.
func (m *multi) RetryContext(ctx context.Context, e core.RetryScheduled) context.Context {
	for _, o := range m.all {
		ctx = o.RetryContext(ctx, e)
	}
	return ctx
}

func (m *multi) GaveUp(e core.GaveUp) { m.each(func(o core.Observer) { o.GaveUp(e) }) }

func (m *multi) Succeeded(e core.Succeeded) { m.each(func(o core.Observer) { o.Succeeded(e) }) }

// OperationEnded tells every member that reads the time of operations,
// also when one before it panics: an operation's end releases state in
// each (an open span), so one member's panic must not leak another's. The
// first panic goes on after.
func (m *timedMulti) OperationEnded(e core.OperationEnded) {
	var first any
	for _, o := range m.timed {
		if v := endOne(o, e); v != nil && first == nil {
			first = v
		}
	}
	if first != nil {
		panic(first)
	}
}

func endOne(o ender, e core.OperationEnded) (v any) {
	defer func() { v = recover() }()
	o.OperationEnded(e)
	return nil
}

func (m *multi) RulesReloaded(e core.RulesReloaded) {
	m.each(func(o core.Observer) { o.RulesReloaded(e) })
}

// asMulti returns the members of an observer Multi returned, nil for any
// other observer.
func asMulti(o core.Observer) *multi {
	switch m := o.(type) {
	case *multi:
		return m
	case *timedMulti:
		return m.multi
	}
	return nil
}
