package hooks

import (
	"context"

	"github.com/crl-go/crl/core"
)

// Multi returns an observer that hands every event to each of observers,
// in order. Nil observers are skipped; with none left it returns nil, which
// costs nothing, and with one left it returns that one. The result
// implements core.OperationObserver when at least one of observers does,
// and core.EndObserver when at least one does, and hands Operation and
// OperationEnded to those only.
func Multi(observers ...core.Observer) core.Observer {
	var out multi
	for _, o := range observers {
		if o == nil {
			continue
		}
		if m, ok := o.(interface{ members() multi }); ok {
			out = append(out, m.members()...)
			continue
		}
		out = append(out, o)
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	var ops []core.OperationObserver
	var ends []core.EndObserver
	for _, o := range out {
		if op, ok := o.(core.OperationObserver); ok {
			ops = append(ops, op)
		}
		if e, ok := o.(core.EndObserver); ok {
			ends = append(ends, e)
		}
	}
	switch {
	case len(ops) == 0 && len(ends) == 0:
		return out
	case len(ends) == 0:
		return multiOps{out, ops}
	case len(ops) == 0:
		return multiEnds{out, ends}
	}
	return multiOpsEnds{multiOps{out, ops}, ends}
}

type multi []core.Observer

func (m multi) members() multi { return m }

// multiOps is a multi with members that count operations.
type multiOps struct {
	multi
	ops []core.OperationObserver
}

func (m multiOps) Operation(k core.Kind) {
	for _, o := range m.ops {
		o.Operation(k)
	}
}

// multiEnds is a multi with members told how operations ended.
type multiEnds struct {
	multi
	ends []core.EndObserver
}

func (m multiEnds) OperationEnded(e core.OperationEnded) { operationEnded(m.ends, e) }

// multiOpsEnds is a multi with members of both kinds.
type multiOpsEnds struct {
	multiOps
	ends []core.EndObserver
}

func (m multiOpsEnds) OperationEnded(e core.OperationEnded) { operationEnded(m.ends, e) }

// operationEnded tells every one of ends, also when one before it panics:
// an operation's end releases state in each (an open span), so one
// member's panic must not leak another's. The first panic goes on after.
func operationEnded(ends []core.EndObserver, e core.OperationEnded) {
	var first any
	for _, o := range ends {
		if v := endOne(o, e); v != nil && first == nil {
			first = v
		}
	}
	if first != nil {
		panic(first)
	}
}

func endOne(o core.EndObserver, e core.OperationEnded) (v any) {
	defer func() { v = recover() }()
	o.OperationEnded(e)
	return nil
}

// RetryContext hands the context of an operation's retries through every
// member that gives one (core.ContextObserver), in order.
func (m multi) RetryContext(ctx context.Context, e core.RetryScheduled) context.Context {
	for _, o := range m {
		if c, ok := o.(core.ContextObserver); ok {
			ctx = c.RetryContext(ctx, e)
		}
	}
	return ctx
}

func (m multi) RetryScheduled(e core.RetryScheduled) {
	for _, o := range m {
		o.RetryScheduled(e)
	}
}

func (m multi) GaveUp(e core.GaveUp) {
	for _, o := range m {
		o.GaveUp(e)
	}
}

func (m multi) Succeeded(e core.Succeeded) {
	for _, o := range m {
		o.Succeeded(e)
	}
}

func (m multi) RulesReloaded(e core.RulesReloaded) {
	for _, o := range m {
		o.RulesReloaded(e)
	}
}

// WantsElapsed reports whether a member reads the events' Elapsed
// (core.ElapsedObserver): the loops time an operation when one does.
func (m multi) WantsElapsed() bool {
	for _, o := range m {
		if eo, ok := o.(core.ElapsedObserver); !ok || eo.WantsElapsed() {
			return true
		}
	}
	return false
}
