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
		r, err := core.NewRetrier(policyOf(t, rules), o)
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

// WantsFirstRowMemo answers as WantsFirstRow, for the text its memo is
// kept for, under the policy in effect: a policy swapped in between two
// calls with the same memo is asked again, whichever way its answer
// goes; an observer told of ends wants the first row whatever the memo.
func TestWantsFirstRowMemoFollowsThePolicy(t *testing.T) {
	const sel = "SELECT 1"
	r, err := core.NewRetrier(policyOf(t, "{1205:3,1:select}"), core.Options{})
	require.NoError(t, err)
	var memo uint64
	assert.True(t, r.WantsFirstRowMemo(sel, &memo), "asked")
	assert.NotZero(t, memo, "the answer remembered")
	assert.True(t, r.WantsFirstRowMemo(sel, &memo), "remembered")
	for _, c := range []struct {
		rules string
		want  bool
	}{
		{"{1205:3,1:update}", false},
		{"{1205:3,1:update,select}", true},
		{"{1205:3,1:update}", false},
		{"", false},
		{"{1205:3,1}", true},
	} {
		require.NoError(t, r.SetPolicy(policyOf(t, c.rules)))
		assert.Equal(t, c.want, r.WantsFirstRowMemo(sel, &memo), "%q, asked", c.rules)
		assert.Equal(t, c.want, r.WantsFirstRowMemo(sel, &memo), "%q, remembered", c.rules)
		assert.Equal(t, r.WantsFirstRow(sel), r.WantsFirstRowMemo(sel, &memo), "%q: as WantsFirstRow", c.rules)
	}

	r, err = core.NewRetrier(policyOf(t, ""), core.Options{Observer: core.NopObserver{}})
	require.NoError(t, err)
	memo = 0
	assert.True(t, r.WantsFirstRowMemo(sel, &memo), "an observer told of ends")
	assert.True(t, r.WantsFirstRowMemo(sel, &memo), "an observer told of ends, remembered")
}

// EveryFirstRow is true only on the lean path and only where
// WantsFirstRow answers true for every text: a rule with retries that
// names no statement. It follows a policy swapped in, and a Hold.
func TestEveryFirstRowOnlyWhereEveryQueryWantsIt(t *testing.T) {
	texts := []string{"SELECT 1", "  /* x */ update t set a = 1", "exec p", ""}
	for _, c := range []struct {
		rules string
		every bool
	}{
		{"", false},
		{"{1205:0,1}", false},
		{"{1205:3,1}", true},
		{"{1205:3,1:select}", false},
		{"{1205:3,1:select}; {1222:2,1}", true},
		{"{1205:0,1}; {1222:2,1:update}", false},
	} {
		r, err := core.NewRetrier(policyOf(t, c.rules), core.Options{})
		require.NoError(t, err)
		assert.Equal(t, c.every, r.EveryFirstRow(), "%q", c.rules)
		if r.EveryFirstRow() {
			for _, q := range texts {
				assert.True(t, r.WantsFirstRow(q), "%q: %q", c.rules, q)
			}
		}
	}

	r, err := core.NewRetrier(policyOf(t, "{1205:3,1:select}"), core.Options{})
	require.NoError(t, err)
	require.NoError(t, r.SetPolicy(policyOf(t, "{1205:3,1}")))
	assert.True(t, r.EveryFirstRow(), "the policy swapped in")
	release := r.Hold()
	assert.False(t, r.EveryFirstRow(), "held: off the lean path")
	release()
	assert.True(t, r.EveryFirstRow(), "released")

	r, err = core.NewRetrier(policyOf(t, "{1205:3,1}"), core.Options{Observer: core.NopObserver{}})
	require.NoError(t, err)
	assert.False(t, r.EveryFirstRow(), "an observer: not lean, WantsFirstRow is asked")
	r, err = core.NewRetrier(core.Policy{Statement: policyOf(t, "{1205:3,1}").Statement, QueryTimeout: 1}, core.Options{})
	require.NoError(t, err)
	assert.False(t, r.EveryFirstRow(), "a queryTimeout: not direct")
}

// policyOf is the policy of the statement rules rules.
func policyOf(t *testing.T, rules string) core.Policy {
	t.Helper()
	s, err := core.ParseStatementRules(rules)
	require.NoError(t, err)
	return core.Policy{Statement: s}
}
