package crl

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/tables/family"
)

// A text the connection ran is known again by its content in a string
// built anew for the call, as GORM builds each statement's: it is seen
// (seenPlain: the direct path) unless it may begin a transaction, its
// entry keeps the newest string, and the rules' answer remembered with it
// (wantsFirstRow) follows the policy swapped in.
func TestATextBuiltAnewIsSeen(t *testing.T) {
	const sel, begin = "SELECT balance FROM accounts WHERE id = 1", "BEGIN TRANSACTION"
	policy := func(rules string) core.Policy {
		t.Helper()
		s, err := core.ParseStatementRules(rules)
		require.NoError(t, err)
		return core.Policy{Statement: s}
	}
	r, err := core.NewRetrier(policy("{1205:3,1:select}"), core.Options{})
	require.NoError(t, err)
	cn := &conn{r: r, dialect: dialectOf(family.SQLServer)}

	assert.False(t, cn.seenPlain(strings.Clone(sel)), "never ran")
	assert.False(t, cn.mayBegin(sel))
	assert.True(t, cn.mayBegin(begin))
	q := strings.Clone(sel)
	require.NotSame(t, unsafe.StringData(sel), unsafe.StringData(q), "other bytes")
	assert.True(t, cn.seenPlain(q), "the same content")
	assert.Same(t, unsafe.StringData(q), unsafe.StringData(cn.seen[0].text), "the entry keeps the newest string")
	assert.False(t, cn.seenPlain(strings.Clone(begin)), "may begin a transaction")
	assert.False(t, cn.seenPlain("SELECT 2"), "another text")

	assert.True(t, cn.wantsFirstRow(q), "a select rule")
	assert.NotZero(t, cn.seen[0].first, "remembered")
	require.NoError(t, r.SetPolicy(policy("{1205:3,1:update}")))
	assert.False(t, cn.wantsFirstRow(q), "an update rule")
	q = strings.Clone(sel)
	assert.False(t, cn.mayBegin(q))
	assert.False(t, cn.wantsFirstRow(q), "an update rule, remembered")
	require.NoError(t, r.SetPolicy(policy("{1205:3,1:select}")))
	assert.True(t, cn.wantsFirstRow(q), "a select rule again")
	assert.True(t, cn.wantsFirstRow("SELECT 2"), "a text not seen: asked")
}
