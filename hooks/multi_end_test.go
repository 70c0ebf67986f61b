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
	ends, ok := endsOf(m)
	require.True(t, ok, "Multi is told of ends when a member is")
	m.Operation(core.KindStatement)
	require.Equal(t, 1, counter.n[core.KindStatement], "and still counts operations")
	ends.OperationEnded(core.OperationEnded{})
	assert.Equal(t, 1, a.n)
	assert.Equal(t, 1, b.n)

	u := &untimedCounter{}
	_, ok = endsOf(hooks.Multi(u, &untimedCounter{}))
	assert.False(t, ok, "no member is told of ends: none reads the time of operations")
	ends, ok = endsOf(hooks.Multi(u, a))
	require.True(t, ok)
	ends.OperationEnded(core.OperationEnded{})
	assert.Equal(t, 2, a.n)
}

func TestMultiOperationEndedReachesEveryMemberWhenOnePanics(t *testing.T) {
	a, b := &endCounter{panic: true}, &endCounter{}
	m := hooks.Multi(a, b)
	ends, ok := endsOf(m)
	require.True(t, ok)
	assert.PanicsWithValue(t, "member", func() { ends.OperationEnded(core.OperationEnded{}) })
	assert.Equal(t, 1, b.n, "the member after the one that panicked still releases its state")
}
