package benchmarks

import (
	"flag"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

var stormPlot = flag.String("storm.plot", "", "write the storm plot (PNG) of BenchmarkStorm to this path")

// stormHandles are the fleet sizes of the comparison. The policies without
// a budget or breaker keep no state per handle, so they behave the same
// for every fleet size and run once.
var stormHandles = []int{1, 10, 100, 1000}

type stormRun struct {
	policy RetryPolicy
	storm  Storm
	result StormResult
	err    error
}

// runStorms runs every policy (the per-handle ones for every fleet size)
// in parallel; each run is deterministic.
func runStorms() []*stormRun {
	var runs []*stormRun
	for _, p := range StormPolicies {
		if !p.Budget && p.Breaker.Failures == 0 {
			runs = append(runs, &stormRun{policy: p, storm: DefaultStorm(1)})
			continue
		}
		for _, n := range stormHandles {
			runs = append(runs, &stormRun{policy: p, storm: DefaultStorm(n)})
		}
	}
	parallel(len(runs), func(i int) { r := runs[i]; r.result, r.err = r.storm.Run(r.policy) })
	return runs
}

// parallel runs fn(0) to fn(n-1), GOMAXPROCS at a time.
func parallel(n int, fn func(i int)) {
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			fn(i)
		}()
	}
	wg.Wait()
}

// checkStorm holds crl's default to the acceptance line of the
// capacity-drop storm: at most 1.1 executions per request while degraded,
// and recovered within 1.5 × baseline, the recovery of no retry.
func checkStorm(tb testing.TB, r StormResult, baseline time.Duration) {
	tb.Helper()
	assert.LessOrEqual(tb, r.Amplification, 1.1, "%v: executions per request while degraded", r)
	if assert.True(tb, r.Recovered, "%v: not recovered", r) {
		assert.LessOrEqual(tb, r.Recovery.Seconds(), 1.5*baseline.Seconds(), "%v: recovery against no retry's %v", r, baseline)
	}
}

// BenchmarkStorm simulates the post-mortem's storm (DefaultStorm: a
// database at 80% of its capacity loses half of it for 10 s; clients give
// up after 1 s and retry a time-out up to 3 times) under each policy, with
// the real core.Retrier deciding, and reports per policy and fleet size:
// executions per request while degraded, the peak queue, and the time to
// recover after the capacity returns. It fails when crl's default exceeds
// 1.1 executions per request while degraded or takes more than 1.5× as
// long as no retry to recover. -storm.plot=path writes the picture of
// docs/benchmarks.md.
func BenchmarkStorm(b *testing.B) {
	runs := runStorms()
	var baseline time.Duration
	for _, r := range runs {
		if r.err != nil {
			b.Fatal(r.err)
		}
		if r.policy.Name == "no retry" {
			baseline = r.result.Recovery
		}
	}
	var table strings.Builder
	fmt.Fprintf(&table, "\n| policy | handles | executions/request while degraded | peak queue | recovery | ÷ no retry |\n|---|---|---|---|---|---|\n")
	for _, r := range runs {
		res := r.result
		handles := fmt.Sprint(res.Handles)
		if !r.policy.Budget && r.policy.Breaker.Failures == 0 {
			handles = "any"
		}
		b.Run(strings.ReplaceAll(res.Policy, " ", "_")+"/handles="+handles, func(b *testing.B) {
			for b.Loop() {
			}
			b.ReportMetric(res.Amplification, "executions/request")
			b.ReportMetric(float64(res.PeakQueue), "peak-queue")
			if res.Recovered {
				b.ReportMetric(res.Recovery.Seconds(), "recovery-s")
			} else {
				b.ReportMetric(-1, "recovery-s")
			}
		})
		rec, ratio, peak := "none within 30 s", "no recovery", fmt.Sprint(res.PeakQueue)
		if res.Recovered {
			rec = fmt.Sprintf("%.1f s", res.Recovery.Seconds())
			ratio = fmt.Sprintf("%.2f", res.Recovery.Seconds()/baseline.Seconds())
		}
		if res.Stopped > 0 {
			peak = "≥ " + peak
		}
		fmt.Fprintf(&table, "| %s | %s | %.2f | %s | %s | %s |\n", res.Policy, handles, res.Amplification, peak, rec, ratio)
		if res.Policy == "crl default" {
			checkStorm(b, res, baseline)
		}
	}
	b.Log(table.String())
	if *stormPlot != "" {
		var fleet []StormResult
		for _, r := range runs {
			if r.result.Handles == 1000 || (!r.policy.Budget && r.policy.Breaker.Failures == 0) {
				fleet = append(fleet, r.result)
			}
		}
		s := DefaultStorm(1000)
		title := fmt.Sprintf("Capacity %.0f → %.0f statements/s for %v; %.0f requests/s from 1,000 handles; client timeout %v",
			s.Capacity, s.Capacity*s.DegradedShare, s.DegradeFor, s.Rate, s.Timeout)
		if err := PlotStorm(s, fleet, title, *stormPlot); err != nil {
			b.Fatal(err)
		}
	}
}
