package core_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
)

// WantsFirstRow is true exactly where a rule could retry an error of the
// query, or where the observer is told how operations end; it follows a
// policy swapped in.
func TestWantsFirstRow(t *testing.T) {
	retrier := func(rules string, o core.Options) *core.Retrier {
		t.Helper()
		s, err := core.ParseStatementRules(rules)
		require.NoError(t, err)
		r, err := core.NewRetrier(core.Policy{Statement: s}, o)
		require.NoError(t, err)
		return r
	}
	const sel, upd = "SELECT 1", "  /* x */ update t set a = 1"
	for _, c := range []struct {
		rules    string
		sel, upd bool
	}{
		{"", false, false},
		{"{1205:0,1}", false, false},
		{"{1205:3,1}", true, true},
		{"{1205:3,1:select}", true, false},
		{"{1205:3,1:update}; {1213:0,1}", false, true},
		{"{1205:3,1:insert}; {1213:2,1:UPDATE,select}", true, true},
	} {
		r := retrier(c.rules, core.Options{})
		assert.Equal(t, c.sel, r.WantsFirstRow(sel), "%q: %s", c.rules, sel)
		assert.Equal(t, c.upd, r.WantsFirstRow(upd), "%q: %s", c.rules, upd)
	}
	r := retrier("", core.Options{Observer: core.NopObserver{}})
	assert.True(t, r.WantsFirstRow(sel), "an observer told of ends")

	r = retrier("", core.Options{})
	s, err := core.ParseStatementRules("{1205:3,1}")
	require.NoError(t, err)
	require.NoError(t, r.SetPolicy(core.Policy{Statement: s}))
	assert.True(t, r.WantsFirstRow(sel), "the policy swapped in")
}
