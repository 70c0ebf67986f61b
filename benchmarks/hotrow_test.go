package benchmarks

import (
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var hotRowPlot = flag.String("hotrow.plot", "", "write the hot-row plot (PNG) of BenchmarkHotRow to this path")

// hotRowWriters are the hot rows' widths; hotRowRules the rules they run
// under.
var (
	hotRowWriters = []int{4, 8, 12, 16, 32, 64}
	hotRowRules   = []string{HotRowBackoff, HotRowImmediate}
)

// checkHotRow holds crl's default to the acceptance line of the hot row:
// not one retry refused by the budget, and the same outcome as no budget
// at all (the rule's retries alone decide).
func checkHotRow(tb testing.TB, r, unbudgeted HotRowResult) {
	tb.Helper()
	assert.Zero(tb, r.Refused, "%v: retries refused by the budget", r)
	assert.Equal(tb, unbudgeted.Committed, r.Committed, "%v: committed, against no budget's %v", r, unbudgeted)
	assert.Equal(tb, unbudgeted.Attempts, r.Attempts, "%v: attempts, against no budget's %v", r, unbudgeted)
}

// checkFilteredStorm holds crl's default to the acceptance line of the
// filtered storm: at most 1.1 executions per request after a handle's
// allowance.
func checkFilteredStorm(tb testing.TB, r FilteredStormResult) {
	tb.Helper()
	if assert.Positive(tb, r.AfterAllowanceRequests, "%+v: no request after its handle's allowance", r) {
		assert.LessOrEqual(tb, r.AfterAllowanceAmplification(), 1.1, "%+v: executions per request after the allowance", r)
	}
}

func TestHotRowRetriesEveryConflict(t *testing.T) {
	for _, rules := range hotRowRules {
		ps := HotRowPolicies(rules)
		crl, jdbc := policyNamed(t, ps, "crl default"), policyNamed(t, ps, "JDBC CRL, no budget")
		for _, victim := range DeadlockVictims() {
			for _, n := range hotRowWriters {
				t.Run(fmt.Sprintf("%s/%s/writers=%d", rules, strings.ReplaceAll(VictimName(victim), " ", "_"), n), func(t *testing.T) {
					t.Parallel()
					h := DefaultHotRow(n, victim)
					r, err := h.Run(crl)
					require.NoError(t, err)
					base, err := h.Run(jdbc)
					require.NoError(t, err)
					checkHotRow(t, r, base)
					if rules == HotRowImmediate {
						// Every writer is in every round: N-1 failures per commit.
						assert.Equal(t, n-1, r.MaxFailedInARound, "%v", r)
						assert.Greater(t, r.FailuresPerCommit(), 0.6*float64(n-1), "%v", r)
					}
				})
			}
		}
	}
}

// TestHotRowOneFailurePerSuccessRefuses shows that the hot-row check can
// fail: a budget that pays for one contention failure per success (the
// ratio before contention had a pool of its own) refuses conflicts from
// 12 writers on with immediate retries, and from 32 with the backoff.
func TestHotRowOneFailurePerSuccessRefuses(t *testing.T) {
	for _, tc := range []struct {
		rules   string
		writers int
	}{{HotRowImmediate, 12}, {HotRowImmediate, 64}, {HotRowBackoff, 32}, {HotRowBackoff, 64}} {
		r, err := DefaultHotRow(tc.writers, DeadlockVictims()[3]).Run(policyNamed(t, HotRowPolicies(tc.rules), "one failure paid per success"))
		require.NoError(t, err)
		assert.Greater(t, r.Refused, r.Transactions/4, "%v", r)
	}
}

// filteredHandles are the fleet sizes of the filtered storm.
var filteredHandles = []int{1, 10, 100, 1000}

func TestFilteredStormBounded(t *testing.T) {
	for _, e := range FilteredStormErrors() {
		for _, n := range filteredHandles {
			t.Run(fmt.Sprintf("%s/handles=%d", strings.ReplaceAll(VictimName(e), " ", "_"), n), func(t *testing.T) {
				t.Parallel()
				r, err := DefaultFilteredStorm(n, e).Run(RetryPolicy{Name: "crl default", Rules: FilteredRules(e), Budget: true})
				require.NoError(t, err)
				checkFilteredStorm(t, r)
			})
		}
	}
	// The check can fail: without a budget each SELECT runs 4 times.
	e := FilteredStormErrors()[0]
	r, err := DefaultFilteredStorm(1, e).Run(RetryPolicy{Name: "JDBC CRL, no budget", Rules: FilteredRules(e)})
	require.NoError(t, err)
	assert.InDelta(t, 1.75, r.Amplification(), 0.01, "%+v", r)
}

type hotRowRun struct {
	rules  string
	policy RetryPolicy
	h      HotRow
	result HotRowResult
	err    error
}

type filteredRun struct {
	policy RetryPolicy
	f      FilteredStorm
	result FilteredStormResult
	err    error
}

// BenchmarkHotRow simulates the hot row (DefaultHotRow: N writers on one
// handle, one commit per round, under the backoff and the immediate rule)
// and the filtered storm (DefaultFilteredStorm) under each policy, with the
// real core.Retrier deciding, and prints their tables. It fails when
// crl's default refuses a hot-row conflict or runs more than 1.1
// executions per request in the filtered storm after a handle's
// allowance, as the tests do, so that CI's one-iteration run of the
// benchmarks checks it too. -hotrow.plot=path writes the picture of
// docs/benchmarks.md.
func BenchmarkHotRow(b *testing.B) {
	var runs []*hotRowRun
	for _, rules := range hotRowRules {
		for _, p := range HotRowPolicies(rules) {
			for _, n := range hotRowWriters {
				runs = append(runs, &hotRowRun{rules: rules, policy: p, h: DefaultHotRow(n, DeadlockVictims()[3])})
			}
		}
	}
	var storms []*filteredRun
	for _, e := range FilteredStormErrors() {
		for _, p := range []RetryPolicy{{Name: "JDBC CRL, no budget", Rules: FilteredRules(e)}, {Name: "crl default", Rules: FilteredRules(e), Budget: true}} {
			hs := filteredHandles
			if !p.Budget {
				hs = hs[:1] // no state per handle: the same for every fleet
			}
			for _, n := range hs {
				storms = append(storms, &filteredRun{policy: p, f: DefaultFilteredStorm(n, e)})
			}
		}
	}
	parallel(len(runs)+len(storms), func(i int) {
		if i < len(runs) {
			r := runs[i]
			r.result, r.err = r.h.Run(r.policy)
			return
		}
		s := storms[i-len(runs)]
		s.result, s.err = s.f.Run(s.policy)
	})
	unbudgeted := map[string]HotRowResult{}
	for _, r := range runs {
		if r.err != nil {
			b.Fatal(r.err)
		}
		if r.policy.Name == "JDBC CRL, no budget" {
			unbudgeted[fmt.Sprint(r.rules, r.h.Writers)] = r.result
		}
	}
	var table strings.Builder
	fmt.Fprintf(&table, "\n| rule | policy | writers | committed (of) | refused by the budget | retries used up | failures per commit | attempts/increment | lowest contention pool |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		res := r.result
		b.Run(strings.ReplaceAll(fmt.Sprintf("%s/%s/writers=%d", r.rules, res.Policy, res.Writers), " ", "_"), func(b *testing.B) {
			for b.Loop() {
			}
			b.ReportMetric(float64(res.Refused), "refused")
			b.ReportMetric(res.Amplification(), "attempts/increment")
		})
		low := "no budget"
		if res.MinContention >= 0 {
			low = fmt.Sprintf("%.1f", res.MinContention)
		}
		fmt.Fprintf(&table, "| `%s` | %s | %d | %d (%d) | %d | %d | %.1f | %.2f | %s |\n", r.rules, res.Policy, res.Writers,
			res.Committed, res.Transactions, res.Refused, res.Exhausted, res.FailuresPerCommit(), res.Amplification(), low)
		if res.Policy == "crl default" {
			checkHotRow(b, res, unbudgeted[fmt.Sprint(r.rules, r.h.Writers)])
		}
	}
	b.Log(table.String())

	var filtered strings.Builder
	fmt.Fprintf(&filtered, "\n| error | rule | policy | handles | executions/request | after the allowance |\n|---|---|---|---|---|---|\n")
	for _, s := range storms {
		if s.err != nil {
			b.Fatal(s.err)
		}
		res := s.result
		handles, after := fmt.Sprint(res.Handles), "never refused (no budget)"
		if !s.policy.Budget {
			handles = "any"
		} else {
			after = fmt.Sprintf("%.3f", res.AfterAllowanceAmplification())
			checkFilteredStorm(b, res)
		}
		fmt.Fprintf(&filtered, "| %s | `%s` | %s | %s | %.3f | %s |\n", res.Err, FilteredRules(s.f.Err), res.Policy, handles, res.Amplification(), after)
	}
	b.Log(filtered.String())

	if *hotRowPlot != "" {
		var lines []Series
		for _, p := range HotRowPolicies(HotRowBackoff) {
			s := Series{Name: p.Name, Bold: p.Budget && p.BudgetSettings.ContentionPerSuccess == 0}
			for _, r := range runs {
				if r.rules == HotRowBackoff && r.policy.Name == p.Name {
					s.Values = append(s.Values, 100*float64(r.result.Committed)/float64(r.result.Transactions))
				}
			}
			lines = append(lines, s)
		}
		title := fmt.Sprintf("A hot row: N writers on one handle, %d increments each, one commit per round; rule %s", DefaultHotRow(1, nil).Increments, HotRowBackoff)
		if err := PlotHotRow(title, hotRowWriters, lines, *hotRowPlot); err != nil {
			b.Fatal(err)
		}
	}
}
