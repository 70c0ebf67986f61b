package hooks_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/hooks"
)

type endCounter struct {
	core.NopObserver
	n     int
	panic bool
}

func (o *endCounter) OperationEnded(core.OperationEnded) {
	o.n++
	if o.panic {
		panic("member")
	}
}

func TestMultiOperationEnded(t *testing.T) {
	a, b, counter := &endCounter{}, &endCounter{}, &opCounter{}
	plain := &coretest.Observer{}
	m := hooks.Multi(a, plain, hooks.Multi(b, counter))
	ends, ok := m.(core.EndObserver)
	require.True(t, ok, "Multi is told of ends when a member is")
	_, ok = m.(core.OperationObserver)
	require.True(t, ok, "and still counts operations")
	ends.OperationEnded(core.OperationEnded{})
	assert.Equal(t, 1, a.n)
	assert.Equal(t, 1, b.n)

	_, ok = hooks.Multi(a, plain).(core.OperationObserver)
	assert.False(t, ok, "no member counts operations")
	_, ok = hooks.Multi(counter, plain).(core.EndObserver)
	assert.False(t, ok, "no member is told of ends")
}

func TestMultiOperationEndedReachesEveryMemberWhenOnePanics(t *testing.T) {
	a, b := &endCounter{panic: true}, &endCounter{}
	m := hooks.Multi(a, b).(core.EndObserver)
	assert.PanicsWithValue(t, "member", func() { m.OperationEnded(core.OperationEnded{}) })
	assert.Equal(t, 1, b.n, "the member after the one that panicked still releases its state")
}
