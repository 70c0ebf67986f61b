package connector_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/crl-go/crl/internal/layer/connector"
)

// The layer's one context key carries a unit, a WithoutRetry mark, or
// both: WithoutRetry keeps the unit readable (its statements are still
// recorded in it, its run is still the attempt), and a unit given to a
// context replaces what it carried, so helpers ask NoRetry first.
func TestUnitAndWithoutRetry(t *testing.T) {
	bg := context.Background()
	assert.Nil(t, connector.UnitOf(bg))
	assert.False(t, connector.NoRetry(bg))
	assert.Zero(t, connector.Attempt(bg))

	u := &connector.Unit{}
	inUnit := connector.WithUnit(bg, u)
	assert.Same(t, u, connector.UnitOf(inUnit))
	assert.False(t, connector.NoRetry(inUnit))
	assert.Zero(t, connector.Attempt(inUnit), "a unit no helper started: an adapter's attempt of one statement")
	u.Start()
	u.Start()
	assert.Equal(t, 2, connector.Attempt(inUnit), "the unit's second run")

	off := connector.WithoutRetry(inUnit)
	assert.True(t, connector.NoRetry(off))
	assert.Same(t, u, connector.UnitOf(off), "the unit stays")
	assert.Equal(t, 2, connector.Attempt(off))
	assert.Equal(t, off, connector.WithoutRetry(off), "once is enough")

	alone := connector.WithoutRetry(bg)
	assert.True(t, connector.NoRetry(alone))
	assert.Nil(t, connector.UnitOf(alone))
	assert.False(t, connector.NoRetry(connector.WithUnit(alone, u)), "a unit replaces the mark")

	var none *connector.Unit
	assert.Empty(t, none.FailedQuery(), "no unit (a helper under WithoutRetry) records nothing")
}
