package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/crl-go/crl/core"
)

// Contention is the second scenario of docs/benchmarks.md, simulated in
// virtual time like Storm: a healthy database (nothing queues, every
// attempt takes Service) whose hot rows make it choose deadlock victims.
// Handles clients run Rate transactions per second in total (Poisson
// arrivals, seeded), each as a whole transaction retried by the real
// core.Retrier of its handle (DoTx, as sqlxcrl.RunInTx and
// gormcrl.Transaction run it). Every attempt, a retry included, is a
// victim with the same chance, so victims come in bursts: CalmShare of
// attempts outside a burst, BurstShare for BurstFor from every
// BurstEvery on. From StormAt, for StormFor (zero: never), every attempt
// is a victim: a deadlock storm, which the budget must bound like any
// other.
type Contention struct {
	Handles    int
	Rate       float64       // transactions per second, all handles together
	Service    time.Duration // one attempt's time on the healthy database
	CalmShare  float64       // the chance that an attempt is a victim outside a burst
	BurstShare float64       // the same during a burst
	BurstEvery time.Duration // a burst starts every BurstEvery, from BurstEvery on
	BurstFor   time.Duration // how long a burst lasts
	StormAt    time.Duration // when a deadlock storm starts
	StormFor   time.Duration // how long it lasts; zero means no storm
	Horizon    time.Duration // when transactions stop arriving
	Victim     error         // the error a victim's attempt returns
	Seed       uint64
}

// ContentionRules is the rule of the contention scenario: the deadlock
// victims and serialization failures of SQL Server (1205), MySQL and
// MariaDB (1213) and PostgreSQL (40001, 40P01), retried 12 times from
// 5 ms on, doubling.
const ContentionRules = "{1205,1213,40001,40P01:12,5ms*2}"

// DefaultContention is the contention scenario of docs/benchmarks.md:
// 1,000 transactions per second, 5% of attempts victims, and 35% in
// bursts of 5 s every 15 s, for 2 minutes; victim is the error a victim
// gets.
func DefaultContention(handles int, victim error) Contention {
	return Contention{
		Handles:    handles,
		Rate:       1000,
		Service:    4 * time.Millisecond,
		CalmShare:  0.05,
		BurstShare: 0.35,
		BurstEvery: 15 * time.Second,
		BurstFor:   5 * time.Second,
		Horizon:    2 * time.Minute,
		Victim:     victim,
		Seed:       1,
	}
}

// DeadlockStorm is DefaultContention with a storm of deadlocks: from 30 s
// on, for 30 s, every attempt is a victim. At 500 transactions per second
// and up to 1,000 handles (half a transaction per second each), a handle
// still meets the storm long after its allowance is spent.
func DeadlockStorm(handles int, victim error) Contention {
	c := DefaultContention(handles, victim)
	c.Rate = 500
	c.StormAt, c.StormFor = 30*time.Second, 30*time.Second
	c.Horizon = 90 * time.Second
	return c
}

// DeadlockVictims are the victims of the contention scenario, one per
// driver family, each in the shape of its driver's error, so that crl
// classifies them as it would the real ones.
func DeadlockVictims() []error {
	return []error{
		sqlServerError{1205, "Transaction (Process ID 57) was deadlocked on lock resources with another process and has been chosen as the deadlock victim. Rerun the transaction."},
		&mysql.MySQLError{Number: 1213, SQLState: [5]byte{'4', '0', '0', '0', '1'}, Message: "Deadlock found when trying to get lock; try restarting transaction"},
		postgresError{"40P01", "deadlock detected"},
		postgresError{"40001", "could not serialize access due to concurrent update"},
	}
}

// VictimName names a victim error by its family and code.
func VictimName(err error) string {
	if n, ok := core.ErrorNumber(err); ok {
		var m *mysql.MySQLError
		if errors.As(err, &m) {
			return fmt.Sprintf("MySQL %d", n)
		}
		return fmt.Sprintf("SQL Server %d", n)
	}
	var st interface{ SQLState() string }
	if errors.As(err, &st) {
		return "PostgreSQL " + st.SQLState()
	}
	return err.Error()
}

// sqlServerError has the shape of go-mssqldb's mssql.Error.
type sqlServerError struct {
	number  int32
	message string
}

func (e sqlServerError) Error() string {
	return fmt.Sprintf("mssql: %s (error %d)", e.message, e.number)
}
func (e sqlServerError) SQLErrorNumber() int32 { return e.number }

// postgresError has the shape of pgx's *pgconn.PgError and lib/pq's *pq.Error.
type postgresError struct{ state, message string }

func (e postgresError) Error() string {
	return fmt.Sprintf("ERROR: %s (SQLSTATE %s)", e.message, e.state)
}
func (e postgresError) SQLState() string { return e.state }

// ContentionResult is what one policy did in a Contention scenario.
type ContentionResult struct {
	Policy  string
	Handles int
	Victim  string // VictimName of the scenario's victim error
	// Transactions and Attempts count every transaction and every attempt
	// the database ran; Victims the attempts it chose as victims, Retried
	// those the Retrier retried.
	Transactions, Attempts, Victims, Retried int
	// Refused counts the transactions that ended with
	// ErrRetryBudgetExceeded, Failed every transaction that ended with an
	// error (refused, retries used up, or not retried at all).
	Refused, Failed int
	// MinBudget and MinContention are the fewest tokens any handle's
	// bucket and contention pool held after a transaction (-1 without a
	// budget).
	MinBudget, MinContention float64
	// StormRequests and StormExecutions count the transactions that
	// started during the deadlock storm and their attempts;
	// AfterAllowanceRequests and AfterAllowanceExecutions those of them
	// that started after their handle's budget had refused a retry in the
	// storm (its initial allowance was spent).
	StormRequests, StormExecutions                   int
	AfterAllowanceRequests, AfterAllowanceExecutions int
}

// VictimsRetried is the share of victims that were retried (1 when there
// were none).
func (r ContentionResult) VictimsRetried() float64 {
	if r.Victims == 0 {
		return 1
	}
	return float64(r.Retried) / float64(r.Victims)
}

// Amplification is attempts per transaction.
func (r ContentionResult) Amplification() float64 {
	return float64(r.Attempts) / float64(r.Transactions)
}

// StormAmplification is executions per transaction that started during
// the deadlock storm, the allowance included.
func (r ContentionResult) StormAmplification() float64 {
	return float64(r.StormExecutions) / float64(max(r.StormRequests, 1))
}

// AfterAllowanceAmplification is executions per transaction that started
// during the deadlock storm after its handle's allowance was spent.
func (r ContentionResult) AfterAllowanceAmplification() float64 {
	return float64(r.AfterAllowanceExecutions) / float64(max(r.AfterAllowanceRequests, 1))
}

// String is one line of the contention table.
func (r ContentionResult) String() string {
	return fmt.Sprintf("%-24s %-16s %4d handles: %d transactions, %d victims, %.1f%% retried, %d refused by the budget, %d failed, %.3f attempts/transaction",
		r.Policy, r.Victim, r.Handles, r.Transactions, r.Victims, 100*r.VictimsRetried(), r.Refused, r.Failed, r.Amplification())
}

// victimShare is the chance that an attempt started at t is a victim.
func (c Contention) victimShare(t time.Duration) float64 {
	if c.StormFor > 0 && t >= c.StormAt && t < c.StormAt+c.StormFor {
		return 1
	}
	if c.BurstEvery > 0 && t >= c.BurstEvery && t%c.BurstEvery < c.BurstFor {
		return c.BurstShare
	}
	return c.CalmShare
}

// Run simulates c under p, whose rules should name c's victim error.
func (c Contention) Run(p RetryPolicy) (ContentionResult, error) {
	if c.Handles < 1 || c.Rate <= 0 || c.Victim == nil {
		return ContentionResult{}, fmt.Errorf("contention scenario: %d handles, rate %v, victim %v: expected at least one handle, a positive rate and a victim error", c.Handles, c.Rate, c.Victim)
	}
	// The coroutine machinery of Storm; its database model is not used.
	sim := &simulation{start: time.Unix(1_700_000_000, 0)}
	sim.clock = simClock{sim}
	run := &contentionSim{c: c, sim: sim, rnd: rand.New(rand.NewPCG(c.Seed, 0xc0de)),
		spent: make([]bool, c.Handles),
		res:   ContentionResult{Policy: p.Name, Handles: c.Handles, Victim: VictimName(c.Victim), MinBudget: -1, MinContention: -1}}
	retriers := make([]*core.Retrier, c.Handles)
	for i := range retriers {
		var err error
		if retriers[i], err = p.retrier(core.Policy{}, core.Options{Clock: sim.clock, Random: run.rnd.Float64}); err != nil {
			return ContentionResult{}, err
		}
	}
	next := time.Duration(0)
	for k := 0; ; k++ {
		next += time.Duration(run.rnd.ExpFloat64() / c.Rate * float64(time.Second))
		if next >= c.Horizon {
			break
		}
		sim.runUntil(next)
		h := k % c.Handles
		inStorm := c.inStorm(next)
		afterAllowance := inStorm && run.spent[h]
		run.res.Transactions++
		sim.spawn(func() { run.transact(retriers[h], h, inStorm, afterAllowance) })
	}
	// Let every transaction end: the longest retry schedule is finite.
	sim.runUntil(time.Duration(1<<62 - 1))
	return run.res, nil
}

// inStorm says whether t falls in the deadlock storm.
func (c Contention) inStorm(t time.Duration) bool {
	return c.StormFor > 0 && t >= c.StormAt && t < c.StormAt+c.StormFor
}

// contentionSim is one simulation of a Contention scenario.
type contentionSim struct {
	c     Contention
	sim   *simulation
	rnd   *rand.Rand
	spent []bool // the handle's budget refused a retry in the storm
	res   ContentionResult
}

// transact runs one transaction on handle h's retrier and counts it;
// inStorm and afterAllowance describe the moment it started.
func (run *contentionSim) transact(r *core.Retrier, h int, inStorm, afterAllowance bool) {
	c, sim, res := run.c, run.sim, &run.res
	attempts := 0
	err := r.DoTx(context.Background(), func(context.Context) (string, error) {
		attempts++
		res.Attempts++
		victim := run.rnd.Float64() < c.victimShare(sim.now)
		sim.waitUntil(sim.now + c.Service)
		if victim {
			res.Victims++
			return "UPDATE storm_accounts SET balance = balance - 1 WHERE id = 1", c.Victim
		}
		return "", nil
	})
	// Every attempt but the last failed and was retried.
	res.Retried += attempts - 1
	if inStorm {
		res.StormRequests++
		res.StormExecutions += attempts
	}
	if afterAllowance {
		res.AfterAllowanceRequests++
		res.AfterAllowanceExecutions += attempts
	}
	if err != nil {
		res.Failed++
		if errors.Is(err, core.ErrRetryBudgetExceeded) {
			res.Refused++
			if c.inStorm(sim.now) {
				run.spent[h] = true
			}
		}
	}
	if b := r.Budget(); b != nil {
		if res.MinBudget < 0 || b.Available() < res.MinBudget {
			res.MinBudget = b.Available()
		}
		if res.MinContention < 0 || contentionTokens(b) < res.MinContention {
			res.MinContention = contentionTokens(b)
		}
	}
}

// ContentionPolicies are the policies of the contention table: each
// retries a victim under ContentionRules.
func ContentionPolicies() []RetryPolicy {
	return []RetryPolicy{
		{Name: "no retry"},
		{Name: "JDBC CRL, no budget", Rules: ContentionRules},
		{Name: "crl default", Rules: ContentionRules, Budget: true},
		// The flat cost of every retryable failure before the budget told
		// contention from overload: what the contention tests guard against.
		{Name: "victims charged 1 token", Rules: ContentionRules, Budget: true,
			BudgetSettings: core.BudgetSettings{Transient: "1205 1213 40001 40P01"}},
	}
}

// contentionTokens is what b's contention pool holds.
func contentionTokens(b *core.Budget) float64 {
	available, _ := b.Tokens("contention")
	return available
}
