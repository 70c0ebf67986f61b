package hooks

import "github.com/crl-go/crl/core"

// Multi returns an observer that hands every event to each of observers,
// in order. Nil observers are skipped; with none left it returns nil, which
// costs nothing.
func Multi(observers ...core.Observer) core.Observer {
	var out multi
	for _, o := range observers {
		if o == nil {
			continue
		}
		if m, ok := o.(multi); ok {
			out = append(out, m...)
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
	return out
}

type multi []core.Observer

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

func (m multi) ConnectionRetry(e core.ConnectionRetry) {
	for _, o := range m {
		o.ConnectionRetry(e)
	}
}

func (m multi) RulesReloaded(e core.RulesReloaded) {
	for _, o := range m {
		o.RulesReloaded(e)
	}
}
