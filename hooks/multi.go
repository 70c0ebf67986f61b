package hooks

import "github.com/crl-go/crl/core"

// Multi returns an observer that hands every event to each of observers,
// in order. Nil observers are skipped; with none left it returns nil, which
// costs nothing, and with one left it returns that one. The result
// implements core.OperationObserver when at least one of observers does,
// and then hands Operation to those only.
func Multi(observers ...core.Observer) core.Observer {
	var out multi
	for _, o := range observers {
		if o == nil {
			continue
		}
		switch m := o.(type) {
		case multi:
			out = append(out, m...)
			continue
		case multiOps:
			out = append(out, m.multi...)
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
	for _, o := range out {
		if op, ok := o.(core.OperationObserver); ok {
			ops = append(ops, op)
		}
	}
	if len(ops) == 0 {
		return out
	}
	return multiOps{out, ops}
}

type multi []core.Observer

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
