package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A failure after a timeout costs TimeoutCost (2), any other 1; a retry
// runs while at least half of Max is left after its failure paid; the
// charge is taken even when the retry is refused; earning stops at Max.
func TestBudgetAccounting(t *testing.T) {
	b, err := NewBudget(BudgetSettings{Max: 10})
	require.NoError(t, err)
	assert.Equal(t, 10.0, b.Available())
	b.earn()
	assert.Equal(t, 10.0, b.Available(), "a full budget stays full")
	assert.True(t, b.withdraw(true))
	assert.Equal(t, 8.0, b.Available())
	assert.True(t, b.withdraw(false))
	assert.True(t, b.withdraw(false))
	assert.True(t, b.withdraw(false))
	assert.Equal(t, 5.0, b.Available())
	assert.False(t, b.withdraw(false), "4 left is below half")
	assert.Equal(t, 4.0, b.Available())
	b.settle(Decision{charge: chargeFail, timeout: true})
	assert.Equal(t, 2.0, b.Available())
	b.settle(Decision{charge: chargeFail, timeout: true})
	b.settle(Decision{charge: chargeFail})
	assert.Equal(t, 0.0, b.Available(), "never below zero")
	for range 10 {
		b.earn()
	}
	assert.InDelta(t, 1.0, b.Available(), 1e-9, "ten successes earn one token")

	d, err := NewBudget(BudgetSettings{})
	require.NoError(t, err)
	assert.Equal(t, 20.0, d.Available(), "the default holds 20 tokens")

	var none *Budget // off: everything allowed
	assert.True(t, none.withdraw(true))
	none.earn()
	none.settle(Decision{charge: chargeFail})
}
