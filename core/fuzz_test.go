package core_test

import (
	"testing"

	"github.com/crl-go/crl/core"
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
		if err != nil {
			t.Fatalf("%q printed as %q does not parse: %v", s, printed, err)
		}
		if again.String() != printed {
			t.Fatalf("%q: %q reparsed as %q", s, printed, again.String())
		}
		assertSameStatementRules(t, rules, again)
		for _, r := range rules.Rules() {
			if len(r.WaitTimes()) != r.Count() {
				t.Fatalf("%v: %d waits for count %d", r, len(r.WaitTimes()), r.Count())
			}
			for _, w := range r.WaitTimes() {
				if w < 0 || w > core.MaxWait {
					t.Fatalf("%v: wait %v out of [0, MaxWait]", r, w)
				}
			}
			r.Matches(s)
		}
	})
}

func FuzzParseConnectionRules(f *testing.F) {
	for _, s := range []string{"", "{+4060}", "{4060};{+40143}", "{+4060,4070}", "{4060:3}", "{abc}", "{40P01,badconn}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := core.ParseConnectionRules(s)
		if err != nil {
			return
		}
		again, err := core.ParseConnectionRules(c.String())
		if err != nil || again.String() != c.String() || again.Replaces() != c.Replaces() {
			t.Fatalf("%q printed as %q reparsed as %q (%v)", s, c.String(), again.String(), err)
		}
		for _, n := range core.TransientErrors() {
			if again.Retryable(n) != c.Retryable(n) {
				t.Fatalf("%q: Retryable(%d) changed on round trip", s, n)
			}
		}
	})
}

func FuzzRuleMatches(f *testing.F) {
	for _, q := range []string{"select 1", "/* x */ update", "-- c\n(select", "/* unterminated", "--"} {
		f.Add(q)
	}
	rules, _ := core.ParseStatementRules("{1205:1:select,update}")
	r, _ := rules.Lookup(1205)
	f.Fuzz(func(t *testing.T, q string) {
		r.Matches(q)
	})
}
