package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/crl-go/crl/core"
)

// HotRow is the third scenario of docs/benchmarks.md, simulated in
// virtual time like Storm: Writers workers on one handle each make
// Increments increments of one counter row, each a whole transaction
// retried by the real core.Retrier of the handle (DoTx). The database
// runs the row's transactions in rounds of Service: a round takes every
// attempt that waits for the row, one of them (at random) commits and
// every other fails with Victim — a PostgreSQL serialization failure, a
// deadlock victim. An attempt that arrives during a round waits for the
// next one. A writer starts its next increment as soon as the last one
// ended. With immediate retries every writer is in every round: each
// round N-1 attempts fail and one commits, the most failures per commit
// a hot row of N writers can produce.
type HotRow struct {
	Writers    int
	Increments int           // per writer
	Service    time.Duration // one round
	Victim     error         // the error of an attempt that loses its round
	Seed       uint64
}

// HotRowBackoff and HotRowImmediate are the rules of the hot-row
// scenario: the victims of every family retried 12 times, from 5 ms on
// doubling (ContentionRules, the rule), or at once.
const (
	HotRowBackoff   = ContentionRules
	HotRowImmediate = "{1205,1213,40001,40P01:12,0+0}"
)

// DefaultHotRow is the hot row of docs/benchmarks.md: writers workers, 8
// increments each, a round of 2 ms.
func DefaultHotRow(writers int, victim error) HotRow {
	return HotRow{Writers: writers, Increments: 8, Service: 2 * time.Millisecond, Victim: victim, Seed: 1}
}

// HotRowResult is what one policy did on a HotRow.
type HotRowResult struct {
	Policy  string
	Writers int
	Victim  string // VictimName of the scenario's victim error
	// Transactions counts the increments tried, Committed those that
	// committed (the counter's value), Attempts every attempt, Victims
	// the attempts that lost their round, Rounds the rounds.
	Transactions, Committed, Attempts, Victims, Rounds int
	// Refused counts the increments that ended with
	// ErrRetryBudgetExceeded, Exhausted those whose rule's retries were
	// used up.
	Refused, Exhausted int
	// MaxFailedInARound is the most attempts that failed in one round.
	MaxFailedInARound int
	// MinContention is the fewest tokens the handle's contention pool
	// held after an attempt (-1 without a budget).
	MinContention float64
}

// Amplification is attempts per increment.
func (r HotRowResult) Amplification() float64 {
	return float64(r.Attempts) / float64(max(r.Transactions, 1))
}

// FailuresPerCommit is the attempts that failed for each that committed.
func (r HotRowResult) FailuresPerCommit() float64 {
	return float64(r.Victims) / float64(max(r.Committed, 1))
}

// String is one line of the hot-row table.
func (r HotRowResult) String() string {
	return fmt.Sprintf("%-36s %-16s %2d writers: %d of %d committed, %d refused by the budget, %d with retries used up, %.1f failures per commit (at most %d in a round), %.2f attempts/increment",
		r.Policy, r.Victim, r.Writers, r.Committed, r.Transactions, r.Refused, r.Exhausted, r.FailuresPerCommit(), r.MaxFailedInARound, r.Amplification())
}

// hotRowDB is the row. Rounds run back to back while attempts wait: an
// attempt joins the round that starts when it arrives, or, when a round
// is running, the next one.
type hotRowDB struct {
	sim  *simulation
	h    HotRow
	rnd  *rand.Rand
	last *hotRound // the latest round, nil before the first
	res  *HotRowResult
}

// hotRound is one round: its attempts, and its winner once decided.
type hotRound struct {
	start   time.Duration
	members int
	winner  int
	decided bool
}

// attempt waits for the end of the attempt's round and reports whether it
// committed.
func (d *hotRowDB) attempt() bool {
	t, s := d.sim.now, d.h.Service
	switch {
	case d.last != nil && t <= d.last.start: // the round starts now, or waits for the running one
	case d.last != nil && t < d.last.start+s: // a round is running: the next one
		d.last = &hotRound{start: d.last.start + s}
	default: // the row is free
		d.last = &hotRound{start: t}
	}
	r := d.last
	me := r.members
	r.members++
	d.sim.waitUntil(r.start + s)
	if !r.decided { // the first of the round to learn its outcome picks the winner
		r.winner, r.decided = d.rnd.IntN(r.members), true
		d.res.Rounds++
		d.res.MaxFailedInARound = max(d.res.MaxFailedInARound, r.members-1)
	}
	return me == r.winner
}

// Run simulates h under p, whose rules should name h's victim error.
func (h HotRow) Run(p RetryPolicy) (HotRowResult, error) {
	if h.Writers < 1 || h.Increments < 1 || h.Service <= 0 || h.Victim == nil {
		return HotRowResult{}, fmt.Errorf("hot-row scenario: %d writers, %d increments, round %v, victim %v: expected at least one writer and increment, a positive round and a victim error",
			h.Writers, h.Increments, h.Service, h.Victim)
	}
	sim := &simulation{start: time.Unix(1_700_000_000, 0)}
	sim.clock = simClock{sim}
	rnd := rand.New(rand.NewPCG(h.Seed, 0x40f))
	r, err := p.retrier(core.Policy{}, core.Options{Clock: sim.clock, Random: rnd.Float64})
	if err != nil {
		return HotRowResult{}, err
	}
	res := HotRowResult{Policy: p.Name, Writers: h.Writers, Victim: VictimName(h.Victim), MinContention: -1}
	db := &hotRowDB{sim: sim, h: h, rnd: rnd, res: &res}
	ctx := context.Background()
	for range h.Writers {
		sim.spawn(func() {
			for range h.Increments {
				res.Transactions++
				err := r.DoTx(ctx, func(context.Context) (string, error) {
					res.Attempts++
					won := db.attempt()
					if b := r.Budget(); b != nil && (res.MinContention < 0 || contentionTokens(b) < res.MinContention) {
						res.MinContention = contentionTokens(b)
					}
					if !won {
						res.Victims++
						return "UPDATE hot_counter SET n = n + 1 WHERE id = 1", h.Victim
					}
					res.Committed++
					return "", nil
				})
				switch {
				case errors.Is(err, core.ErrRetryBudgetExceeded):
					res.Refused++
				case errors.Is(err, core.ErrRetriesExhausted):
					res.Exhausted++
				}
			}
		})
	}
	sim.runUntil(time.Duration(1<<62 - 1))
	return res, nil
}

// HotRowPolicies are the policies of the hot-row table under rules.
func HotRowPolicies(rules string) []RetryPolicy {
	return []RetryPolicy{
		{Name: "no retry"},
		{Name: "JDBC CRL, no budget", Rules: rules},
		{Name: "crl default", Rules: rules, Budget: true},
		// One contention failure paid per success: the ratio the budget
		// sustained before contention had a pool of its own (a victim cost
		// 0.1 token, a success earned 0.1).
		{Name: "one failure paid per success", Rules: rules, Budget: true,
			BudgetSettings: core.BudgetSettings{ContentionPerSuccess: 1}},
	}
}

// FilteredStorm is the fourth scenario of docs/benchmarks.md: a storm in
// which every attempt fails with Err, under a rule that retries Err only
// for SELECTs; one request in four is a SELECT, the others UPDATEs, whose
// failures no rule retries. Handles clients send Rate requests per second
// in total (Poisson arrivals, seeded) for Horizon. An error that no rule
// retries is not a success: it must not pay for the SELECTs' retries.
type FilteredStorm struct {
	Handles int
	Rate    float64
	Horizon time.Duration
	Err     error
	Seed    uint64
}

// FilteredRules returns the rule of the filtered storm for err: its
// number or SQLSTATE, 3 immediate retries, SELECTs only.
func FilteredRules(err error) string {
	tok := strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(VictimName(err), "SQL Server "), "MySQL "), "PostgreSQL ")
	return "{" + tok + ":3,0+0:select}"
}

// FilteredStormErrors are the errors of the filtered storm: contention of
// each family, and SQL Server's transient failover and overload.
func FilteredStormErrors() []error {
	return append(DeadlockVictims(),
		sqlServerError{40613, "Database 'shop' on server 'prod' is not currently available. Please retry the connection later."},
		sqlServerError{40501, "The service is currently busy. Retry the request after 10 seconds."})
}

// DefaultFilteredStorm is the filtered storm of docs/benchmarks.md: 100
// requests per second for 10 minutes from handles handles.
func DefaultFilteredStorm(handles int, err error) FilteredStorm {
	return FilteredStorm{Handles: handles, Rate: 100, Horizon: 10 * time.Minute, Err: err, Seed: 1}
}

// FilteredStormResult is what one policy did in a FilteredStorm.
type FilteredStormResult struct {
	Policy  string
	Handles int
	Err     string
	// Requests and Executions count every request and attempt;
	// AfterAllowanceRequests and AfterAllowanceExecutions those of the
	// requests that started after their handle's budget had refused a
	// retry.
	Requests, Executions                             int
	AfterAllowanceRequests, AfterAllowanceExecutions int
}

// Amplification is executions per request, the allowance included.
func (r FilteredStormResult) Amplification() float64 {
	return float64(r.Executions) / float64(max(r.Requests, 1))
}

// AfterAllowanceAmplification is executions per request after the
// handle's allowance was spent.
func (r FilteredStormResult) AfterAllowanceAmplification() float64 {
	return float64(r.AfterAllowanceExecutions) / float64(max(r.AfterAllowanceRequests, 1))
}

// Run simulates f under p, whose rules should be FilteredRules(f.Err).
func (f FilteredStorm) Run(p RetryPolicy) (FilteredStormResult, error) {
	if f.Handles < 1 || f.Rate <= 0 || f.Err == nil {
		return FilteredStormResult{}, fmt.Errorf("filtered storm: %d handles, rate %v, error %v: expected at least one handle, a positive rate and an error", f.Handles, f.Rate, f.Err)
	}
	sim := &simulation{start: time.Unix(1_700_000_000, 0)}
	sim.clock = simClock{sim}
	rnd := rand.New(rand.NewPCG(f.Seed, 0xf17))
	retriers := make([]*core.Retrier, f.Handles)
	for i := range retriers {
		var err error
		if retriers[i], err = p.retrier(core.Policy{}, core.Options{Clock: sim.clock, Random: rnd.Float64}); err != nil {
			return FilteredStormResult{}, err
		}
	}
	spent := make([]bool, f.Handles)
	res := FilteredStormResult{Policy: p.Name, Handles: f.Handles, Err: VictimName(f.Err)}
	ctx := context.Background()
	next := time.Duration(0)
	for k := 0; ; k++ {
		next += time.Duration(rnd.ExpFloat64() / f.Rate * float64(time.Second))
		if next >= f.Horizon {
			break
		}
		sim.runUntil(next)
		h := k % f.Handles
		query := "UPDATE stock SET n = n - 1 WHERE id = 7"
		if k%4 == 3 {
			query = "SELECT n FROM stock WHERE id = 7"
		}
		after := spent[h]
		res.Requests++
		sim.spawn(func() {
			n := 0
			err := retriers[h].Do(ctx, query, func(context.Context) error {
				n++
				return f.Err
			})
			res.Executions += n
			if after {
				res.AfterAllowanceRequests++
				res.AfterAllowanceExecutions += n
			}
			if errors.Is(err, core.ErrRetryBudgetExceeded) {
				spent[h] = true
			}
		})
	}
	sim.runUntil(time.Duration(1<<62 - 1))
	return res, nil
}
