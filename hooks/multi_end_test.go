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
	require.True(t, m.WantsElapsed(), "Multi is told of ends when a member is")
	m.Operation(core.KindStatement)
	require.Equal(t, 1, counter.n[core.KindStatement], "and still counts operations")
	m.OperationEnded(core.OperationEnded{})
	assert.Equal(t, 1, a.n)
	assert.Equal(t, 1, b.n)

	u := &untimedEnd{}
	hooks.Multi(u, &untimedCounter{}).OperationEnded(core.OperationEnded{})
	assert.Zero(t, u.n, "no member is told of ends: none reads the time of operations")
	hooks.Multi(u, a).OperationEnded(core.OperationEnded{})
	assert.Zero(t, u.n, "a member whose WantsElapsed is false is not told of ends")
	assert.Equal(t, 2, a.n)
}

// untimedEnd counts OperationEnded calls and does not read the time of
// operations: it must not be told of ends.
type untimedEnd struct{ endCounter }

func (*untimedEnd) WantsElapsed() bool { return false }

func TestMultiOperationEndedReachesEveryMemberWhenOnePanics(t *testing.T) {
	a, b := &endCounter{panic: true}, &endCounter{}
	m := hooks.Multi(a, b)
	assert.PanicsWithValue(t, "member", func() { m.OperationEnded(core.OperationEnded{}) })
	assert.Equal(t, 1, b.n, "the member after the one that panicked still releases its state")
}
