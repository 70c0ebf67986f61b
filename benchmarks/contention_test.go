package benchmarks

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// contentionHandles are the fleet sizes of the contention scenarios.
var contentionHandles = []int{1, 10, 100, 1000}

// policyNamed returns the policy of ps called name.
func policyNamed(tb testing.TB, ps []RetryPolicy, name string) RetryPolicy {
	tb.Helper()
	for _, p := range ps {
		if p.Name == name {
			return p
		}
	}
	tb.Fatalf("no policy %q", name)
	return RetryPolicy{}
}

// checkContention holds crl's default to the acceptance line of the
// contention scenario: every victim retried, none refused by the budget,
// no transaction failed.
func checkContention(tb testing.TB, r ContentionResult) {
	tb.Helper()
	assert.Zero(tb, r.Refused, "%v: retries refused by the budget", r)
	assert.Zero(tb, r.Failed, "%v: failed transactions", r)
	assert.Equal(tb, r.Victims, r.Retried, "%v: victims not retried", r)
}

// checkDeadlockStorm holds crl's default to the acceptance line of a full
// storm: at most 1.1 executions per transaction once a handle's allowance
// is spent.
func checkDeadlockStorm(tb testing.TB, r ContentionResult) {
	tb.Helper()
	if assert.Positive(tb, r.AfterAllowanceRequests, "%v: no transaction met the storm after its handle's allowance", r) {
		assert.LessOrEqual(tb, r.AfterAllowanceAmplification(), 1.1, "%v: executions per transaction in the storm after the allowance", r)
	}
}

func TestContentionRetriesEveryVictim(t *testing.T) {
	crl := policyNamed(t, ContentionPolicies(), "crl default")
	for _, victim := range DeadlockVictims() {
		for _, n := range contentionHandles {
			t.Run(fmt.Sprintf("%s/handles=%d", strings.ReplaceAll(VictimName(victim), " ", "_"), n), func(t *testing.T) {
				t.Parallel()
				c := DefaultContention(n, victim)
				r, err := c.Run(crl)
				require.NoError(t, err)
				// The scenario is what it says: victims above the calm share
				// overall, which only the bursts can do.
				require.Greater(t, float64(r.Victims)/float64(r.Attempts), c.CalmShare, "%v", r)
				checkContention(t, r)
			})
		}
	}
}

// TestContentionFlatCostRefuses shows that the contention check can fail:
// with every victim charged as a transient failure (1 token, the flat cost
// before the budget told contention from overload), the bursts drain the
// budget and victims go unretried.
func TestContentionFlatCostRefuses(t *testing.T) {
	flat := policyNamed(t, ContentionPolicies(), "victims charged 1 token")
	for _, victim := range DeadlockVictims() {
		r, err := DefaultContention(1, victim).Run(flat)
		require.NoError(t, err)
		assert.Positive(t, r.Refused, "%v", r)
		assert.Less(t, r.VictimsRetried(), 0.9, "%v", r)
	}
}

func TestDeadlockStormBounded(t *testing.T) {
	ps := ContentionPolicies()
	crl, jdbc := policyNamed(t, ps, "crl default"), policyNamed(t, ps, "JDBC CRL, no budget")
	for _, victim := range DeadlockVictims() {
		for _, n := range contentionHandles {
			t.Run(fmt.Sprintf("%s/handles=%d", strings.ReplaceAll(VictimName(victim), " ", "_"), n), func(t *testing.T) {
				t.Parallel()
				r, err := DeadlockStorm(n, victim).Run(crl)
				require.NoError(t, err)
				checkDeadlockStorm(t, r)
			})
		}
	}
	// The check can fail: without a budget every victim of the storm runs
	// all 12 retries.
	r, err := DeadlockStorm(1, DeadlockVictims()[0]).Run(jdbc)
	require.NoError(t, err)
	assert.Greater(t, r.StormAmplification(), 10.0, "%v", r)
}

// TestStormDefaultBounded is BenchmarkStorm's acceptance line as a test:
// in the capacity-drop storm, crl's default runs at most 1.1 executions
// per request while the database is degraded (its allowance included) and
// recovers within 1.5 × the time no retry takes, for every fleet size.
func TestStormDefaultBounded(t *testing.T) {
	ps := StormPolicies
	base, err := DefaultStorm(1).Run(policyNamed(t, ps, "no retry"))
	require.NoError(t, err)
	require.True(t, base.Recovered, "%v", base)
	crl := policyNamed(t, ps, "crl default")
	for _, n := range stormHandles {
		t.Run(fmt.Sprintf("handles=%d", n), func(t *testing.T) {
			t.Parallel()
			r, err := DefaultStorm(n).Run(crl)
			require.NoError(t, err)
			checkStorm(t, r, base.Recovery)
		})
	}
}

type contentionRun struct {
	scenario string // "contention" or "deadlock storm"
	policy   RetryPolicy
	c        Contention
	result   ContentionResult
	err      error
}

// runContention runs every policy of ContentionPolicies in both scenarios
// for every fleet size with SQL Server's victim (the classes are one table,
// so the other families behave the same), and crl's default with every
// family's victim, in parallel; each run is deterministic.
func runContention() []*contentionRun {
	var runs []*contentionRun
	victims := DeadlockVictims()
	for _, scenario := range []string{"contention", "deadlock storm"} {
		build := DefaultContention
		if scenario == "deadlock storm" {
			build = DeadlockStorm
		}
		for _, p := range ContentionPolicies() {
			vs := victims[:1]
			if p.Name == "crl default" {
				vs = victims
			}
			for _, v := range vs {
				for _, n := range contentionHandles {
					runs = append(runs, &contentionRun{scenario: scenario, policy: p, c: build(n, v)})
				}
			}
		}
	}
	parallel(len(runs), func(i int) { r := runs[i]; r.result, r.err = r.c.Run(r.policy) })
	return runs
}

// BenchmarkContention simulates the contention scenario (DefaultContention:
// a healthy database choosing deadlock victims among 5% of attempts, 35%
// in bursts) and the deadlock storm (DeadlockStorm: every attempt a victim
// for 30 s) under each policy of ContentionPolicies, with the real
// core.Retrier deciding, and reports the share of victims retried, the
// budget's refusals and the executions per transaction. It fails when
// crl's default leaves a victim of the contention scenario unretried or
// runs more than 1.1 executions per transaction in the storm after a
// handle's allowance, as the tests do, so that CI's one-iteration run of
// the benchmarks checks it too.
func BenchmarkContention(b *testing.B) {
	runs := runContention()
	var contention, storm strings.Builder
	fmt.Fprintf(&contention, "\n| policy | victim | handles | victims (share of attempts) | victims retried | refused by the budget | failed transactions | attempts/transaction | lowest bucket (of 20) | lowest contention pool (of 12.8) |\n|---|---|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(&storm, "\n| policy | victim | handles | executions/transaction in the storm | after the allowance | failed in all |\n|---|---|---|---|---|---|\n")
	for _, r := range runs {
		if r.err != nil {
			b.Fatal(r.err)
		}
		res := r.result
		b.Run(strings.ReplaceAll(r.scenario+"/"+res.Policy+"/"+res.Victim, " ", "_")+fmt.Sprintf("/handles=%d", res.Handles), func(b *testing.B) {
			for b.Loop() {
			}
			b.ReportMetric(res.VictimsRetried(), "victims-retried")
			b.ReportMetric(float64(res.Refused), "refused")
			if r.scenario == "contention" {
				b.ReportMetric(res.Amplification(), "executions/transaction")
			} else {
				b.ReportMetric(res.StormAmplification(), "executions/transaction")
			}
		})
		low, pool := "no budget", "no budget"
		if res.MinBudget >= 0 {
			low, pool = fmt.Sprintf("%.1f", res.MinBudget), fmt.Sprintf("%.1f", res.MinContention)
		}
		if r.scenario == "contention" {
			fmt.Fprintf(&contention, "| %s | %s | %d | %d (%.1f%%) | %.1f%% | %d | %d | %.3f | %s | %s |\n", res.Policy, res.Victim, res.Handles,
				res.Victims, 100*float64(res.Victims)/float64(res.Attempts), 100*res.VictimsRetried(), res.Refused, res.Failed, res.Amplification(), low, pool)
			if res.Policy == "crl default" {
				checkContention(b, res)
			}
			continue
		}
		after := "never refused"
		if res.AfterAllowanceRequests > 0 {
			after = fmt.Sprintf("%.3f", res.AfterAllowanceAmplification())
		}
		fmt.Fprintf(&storm, "| %s | %s | %d | %.2f | %s | %d of %d |\n", res.Policy, res.Victim, res.Handles,
			res.StormAmplification(), after, res.Failed, res.Transactions)
		if res.Policy == "crl default" {
			checkDeadlockStorm(b, res)
		}
	}
	b.Log(contention.String())
	b.Log(storm.String())
}
