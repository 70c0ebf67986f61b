package core_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/tables/limits"
	"github.com/crl-go/crl/internal/text/sqlscan"
)

func FuzzParseStatementRules(f *testing.F) {
	for _, tc := range validStatementCases {
		f.Add(tc.value)
	}
	for _, tc := range invalidStatementCases {
		f.Add(tc.value)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rules, err := core.ParseStatementRules(s)
		if err != nil {
			return
		}
		printed := rules.String()
		again, err := core.ParseStatementRules(printed)
		require.NoError(t, err, "%q printed as %q does not parse", s, printed)
		require.Equal(t, printed, again.String(), "%q: %q reparsed", s, printed)
		assertSameStatementRules(t, rules, again)
		for _, r := range rules.Rules() {
			require.Len(t, r.WaitTimes(), r.Count(), "%q: %v: waits for count %d", s, r, r.Count())
			for _, w := range r.WaitTimes() {
				require.True(t, w >= 0 && w <= limits.MaxWait, "%q: %v: wait %v out of [0, MaxWait]", s, r, w)
			}
			r.Matches(s)
		}
	})
}

func FuzzParseConnectionRules(f *testing.F) {
	for _, s := range []string{"", "{+4060}", "{4060};{+40143}", "{+4060,4070}", "{4060:3}", "{abc}", "{40P01,badconn}", "{+failover,throttle}", "{deadlock}", "{Failover;4060}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := core.ParseConnectionRules(s)
		if err != nil {
			return
		}
		again, err := core.ParseConnectionRules(c.String())
		require.NoError(t, err, "%q printed as %q does not parse", s, c.String())
		require.Equal(t, c.String(), again.String(), "%q printed as %q reparsed", s, c.String())
		require.Equal(t, c.Replaces(), again.Replaces(), "%q printed as %q: Replaces changed on round trip", s, c.String())
		for _, n := range core.TransientErrors() {
			require.Equal(t, c.Retryable(n), again.Retryable(n), "%q: Retryable(%d) changed on round trip", s, n)
		}
	})
}

func FuzzRuleMatches(f *testing.F) {
	for _, q := range []string{"select 1", "/* x */ update", "-- c\n(select", "/* unterminated", "--"} {
		f.Add(q)
	}
	rules, err := core.ParseStatementRules("{1205:1,0:select,update}")
	require.NoError(f, err)
	r, ok := rules.Lookup(1205)
	require.True(f, ok, "the rule of 1205")
	f.Fuzz(func(t *testing.T, q string) {
		kw := strings.ToLower(sqlscan.FirstKeyword(q))
		assert.Equal(t, kw == "select" || kw == "update", r.Matches(q), "%q: first keyword %q", q, kw)
	})
}
