package benchmarks

import (
	"container/heap"
	"context"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"time"

	"github.com/crl-go/crl/core"
)

// Storm is the post-mortem's scenario, simulated in virtual time: a
// database that runs Capacity statements per second in order of arrival
// (so its latency grows with its queue) and keeps running a statement whose
// client gave up, Handles clients offering Rate requests per second in
// total (Poisson arrivals, seeded), each attempt bounded by Timeout on the
// client; at DegradeAt the capacity drops to Capacity × DegradedShare for
// DegradeFor, then comes back. The retry decisions are made by the real
// core.Retrier of each handle, on the simulation's clock; the simulation
// models only the database.
type Storm struct {
	Handles       int
	Rate          float64       // requests per second, all handles together
	Capacity      float64       // statements per second when healthy
	Timeout       time.Duration // the client's time limit per attempt
	DegradeAt     time.Duration
	DegradeFor    time.Duration
	DegradedShare float64       // the capacity left while degraded
	Horizon       time.Duration // when the simulation stops
	Bucket        time.Duration // width of a Series bucket
	Seed          uint64
}

// DefaultStorm is the scenario of docs/benchmarks.md: a database at 80% of
// its capacity loses half of it for 10 s.
func DefaultStorm(handles int) Storm {
	return Storm{
		Handles:       handles,
		Rate:          8000,
		Capacity:      10000,
		Timeout:       time.Second,
		DegradeAt:     3 * time.Second,
		DegradeFor:    10 * time.Second,
		DegradedShare: 0.5,
		Horizon:       40 * time.Second,
		Bucket:        500 * time.Millisecond,
		Seed:          1,
	}
}

// RetryPolicy is one client-side retry policy of the comparison.
type RetryPolicy struct {
	Name   string
	Rules  string // retryExec rules for the timeout token; "" retries nothing
	Budget bool   // a crl retry budget, fresh for each handle
	// BudgetSettings are the budget's settings when Budget is set; the
	// zero value is crl's default.
	BudgetSettings core.BudgetSettings
	Jitter         core.Jitter
	Breaker        core.BreakerSettings
}

// StormPolicies are the policies of the post-mortem's table and crl's: each
// retries a time-out up to 3 times. Immediate retries are "0+0": a bare
// "0" waits 0, 2 s, 4 s, since JDBC's default change is +2 s.
var StormPolicies = []RetryPolicy{
	{Name: "no retry"},
	{Name: "immediate", Rules: "{timeout:3,0+0}"},
	{Name: "fixed delay", Rules: "{timeout:3,100ms+0}"},
	{Name: "exponential", Rules: "{timeout:3,100ms*2}"},
	{Name: "exponential + full jitter", Rules: "{timeout:3,100ms*2}", Jitter: core.JitterFull},
	{Name: "exponential + full jitter + budget", Rules: "{timeout:3,100ms*2}", Jitter: core.JitterFull, Budget: true},
	{Name: "JDBC CRL, no budget", Rules: "{timeout:3,1*2}"},
	{Name: "crl default", Rules: "{timeout:3,1*2}", Budget: true},
	{Name: "crl + breaker", Rules: "{timeout:3,1*2}", Budget: true, Breaker: core.BreakerSettings{Failures: 5, OpenFor: 5 * time.Second}},
}

// StormResult is what one policy did in a Storm.
type StormResult struct {
	Policy  string
	Handles int
	// Budget says the policy had crl's retry budget.
	Budget bool
	// Requests and Executions count the requests that arrived while the
	// database was degraded and the statements it received meanwhile.
	Requests, Executions int
	// Amplification is Executions ÷ Requests.
	Amplification float64
	// PeakQueue is the most statements the database held at once.
	PeakQueue int
	// Recovery is the time from the capacity's return to the last attempt
	// that timed out; Recovered is false when attempts still time out in
	// the last 10 s before the Horizon.
	Recovery  time.Duration
	Recovered bool
	// Stopped is when the run was stopped because the database could no
	// longer recover before the Horizon (zero when it ran to the end).
	Stopped time.Duration
	// Series is the statements started per second, one per Bucket, up to
	// Stopped or the Horizon.
	Series []float64
}

// String is one line of the storm table: amplification, peak queue and
// recovery.
func (r StormResult) String() string {
	rec := "not recovered"
	if r.Recovered {
		rec = r.Recovery.Round(100 * time.Millisecond).String()
	}
	return fmt.Sprintf("%-26s %5d handles: %.2f× while degraded, peak queue %d, recovery %s",
		r.Policy, r.Handles, r.Amplification, r.PeakQueue, rec)
}

var errClientTimeout = fmt.Errorf("client gave up on the statement: %w", context.DeadlineExceeded)

// Run simulates s under p.
func (s Storm) Run(p RetryPolicy) (StormResult, error) {
	sim := &simulation{storm: s, start: time.Unix(1_700_000_000, 0)}
	sim.clock = simClock{sim}
	rnd := rand.New(rand.NewPCG(s.Seed, 0x5eed))
	retriers := make([]*core.Retrier, s.Handles)
	for i := range retriers {
		var err error
		if retriers[i], err = p.retrier(core.Policy{}, core.Options{Clock: sim.clock, Random: rnd.Float64}); err != nil {
			return StormResult{}, err
		}
	}
	res := StormResult{Policy: p.Name, Handles: s.Handles, Budget: p.Budget, Series: make([]float64, int(s.Horizon/s.Bucket))}
	sim.result = &res
	degradedEnd := s.DegradeAt + s.DegradeFor
	ctx := context.Background()
	next := time.Duration(0)
	for k := 0; ; k++ {
		next += time.Duration(rnd.ExpFloat64() / s.Rate * float64(time.Second))
		if next >= s.Horizon {
			break
		}
		sim.runUntil(next)
		if cutoff := s.Horizon - 10*time.Second; next > degradedEnd && next < cutoff && sim.backlog(next)-(cutoff-next) > s.Timeout {
			// Even with no more arrivals the database could not drain its
			// queue below the Timeout by 10 s before the Horizon: it does
			// not recover; stop early.
			sim.stopped = true
			res.Stopped = next
			res.Series = res.Series[:int(next/s.Bucket)]
			break
		}
		if next >= s.DegradeAt && next < degradedEnd {
			res.Requests++
		}
		r := retriers[k%s.Handles]
		sim.spawn(func() { _ = r.Do(ctx, "select", sim.statement) })
	}
	if !sim.stopped {
		sim.runUntil(s.Horizon)
	}
	res.Amplification = float64(res.Executions) / float64(res.Requests)
	if sim.lastTimeout > degradedEnd {
		res.Recovery = sim.lastTimeout - degradedEnd
	}
	res.Recovered = !sim.stopped && sim.lastTimeout < s.Horizon-10*time.Second
	for i := range res.Series {
		res.Series[i] /= s.Bucket.Seconds()
	}
	return res, nil
}

// simulation is the event loop: requests are coroutines that run one at a
// time, each until it waits (for the database or a retry's wait), so the
// run is deterministic.
type simulation struct {
	storm  Storm
	start  time.Time
	now    time.Duration
	clock  simClock
	events events
	seq    uint64
	cur    *coroutine
	result *StormResult

	busyUntil   time.Duration   // when the database finishes what it holds
	queue       []time.Duration // finish times of the statements it holds
	lastTimeout time.Duration
	stopped     bool // the run ended early: the database could not recover
}

// backlog is the time the database needs, at full capacity, for what it
// holds at t.
func (s *simulation) backlog(t time.Duration) time.Duration {
	return max(s.busyUntil-t, 0)
}

type coroutine struct {
	next  func() (struct{}, bool)
	yield func(struct{}) bool
}

// spawn starts fn as a coroutine now; it runs until its first wait.
func (s *simulation) spawn(fn func()) {
	co := &coroutine{}
	co.next, _ = iter.Pull(func(yield func(struct{}) bool) {
		co.yield = yield
		fn()
	})
	s.resume(co)
}

func (s *simulation) resume(co *coroutine) {
	prev := s.cur
	s.cur = co
	co.next()
	s.cur = prev
}

// waitUntil suspends the running coroutine until t.
func (s *simulation) waitUntil(t time.Duration) {
	s.seq++
	heap.Push(&s.events, event{at: t, seq: s.seq, co: s.cur})
	s.cur.yield(struct{}{})
}

// runUntil resumes every coroutine due before t, in time order.
func (s *simulation) runUntil(t time.Duration) {
	for len(s.events) > 0 && s.events[0].at <= t {
		e := heap.Pop(&s.events).(event)
		s.now = e.at
		s.resume(e.co)
	}
	s.now = t
}

// statement is one attempt: the database queues it; the client waits for
// its end or gives up at the Timeout, while the database runs it anyway.
func (s *simulation) statement(context.Context) error {
	t := s.now
	finish := s.submit(t)
	st := s.storm
	if t >= st.DegradeAt && t < st.DegradeAt+st.DegradeFor {
		s.result.Executions++
	}
	if b := int(t / st.Bucket); b < len(s.result.Series) {
		s.result.Series[b]++
	}
	if finish-t <= st.Timeout {
		s.waitUntil(finish)
		return nil
	}
	s.lastTimeout = t + st.Timeout
	s.waitUntil(t + st.Timeout)
	return errClientTimeout
}

// submit queues a statement that arrives at t and returns when it ends.
func (s *simulation) submit(t time.Duration) time.Duration {
	i := 0
	for i < len(s.queue) && s.queue[i] <= t {
		i++
	}
	s.queue = s.queue[i:]
	finish := s.work(max(t, s.busyUntil))
	s.busyUntil = finish
	s.queue = append(s.queue, finish)
	s.result.PeakQueue = max(s.result.PeakQueue, len(s.queue))
	return finish
}

// work returns when one statement started at t ends, at the capacity of
// each moment.
func (s *simulation) work(t time.Duration) time.Duration {
	st := s.storm
	left := 1.0 // statements
	for {
		rate, until := st.Capacity, time.Duration(math.MaxInt64)
		switch end := st.DegradeAt + st.DegradeFor; {
		case t < st.DegradeAt:
			until = st.DegradeAt
		case t < end:
			rate, until = st.Capacity*st.DegradedShare, end
		}
		need := time.Duration(left / rate * float64(time.Second))
		if t+need <= until {
			return t + need
		}
		left -= (until - t).Seconds() * rate
		t = until
	}
}

// simClock is the simulation's core.Clock: Sleep suspends the request.
type simClock struct{ s *simulation }

func (c simClock) Now() time.Time { return c.s.start.Add(c.s.now) }

func (c simClock) Sleep(ctx context.Context, d time.Duration) error {
	if d > 0 {
		c.s.waitUntil(c.s.now + d)
	}
	return ctx.Err()
}

type event struct {
	at  time.Duration
	seq uint64
	co  *coroutine
}

type events []event

func (e events) Len() int { return len(e) }
func (e events) Less(i, j int) bool {
	if e[i].at != e[j].at {
		return e[i].at < e[j].at
	}
	return e[i].seq < e[j].seq
}
func (e events) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)   { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

// retrier returns a Retrier that runs p: base with p's rules and jitter,
// and o with p's budget (fresh, of p.BudgetSettings) and breaker (on o's
// clock).
func (p RetryPolicy) retrier(base core.Policy, o core.Options) (*core.Retrier, error) {
	if p.Rules != "" {
		rules, err := core.ParseStatementRules(p.Rules)
		if err != nil {
			return nil, fmt.Errorf("policy %s: %w", p.Name, err)
		}
		base.Statement = rules
	}
	base.Jitter = p.Jitter
	if p.Budget {
		b, err := core.NewBudget(p.BudgetSettings) // zero: the default the config package gives a handle
		if err != nil {
			return nil, fmt.Errorf("policy %s: %w", p.Name, err)
		}
		o.Budget = b
	}
	b, err := core.NewBreaker(p.Breaker, o.Clock) // nil: off
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", p.Name, err)
	}
	o.Breaker = b
	return core.NewRetrier(base, o)
}
