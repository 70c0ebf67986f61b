package core_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/internal/tables/limits"
)

// contentionPool is what b's contention pool holds.
func contentionPool(b *core.Budget) float64 {
	available, _ := b.Tokens("contention")
	return available
}

// The rates of the acceptance line, in requests per second per handle.
var budgetRates = []float64{0.5, 1, 2, 5, 10, 100, 1000, 10000}

// stormRules retries deadlocks, serialization failures, throttling,
// failovers and time-outs 3 times at once: with no wait, the virtual time
// is exactly the arrival time of the requests, so any dependence of the
// budget on time shows at its full size.
const stormRules = "{1205,40P01,40001,40501,40613,timeout:3,0}"

// request is the outcome of one request of a drive.
type request struct {
	handle     int
	executions int
	err        error
}

// drive sends perHandle requests to each of handles Retriers (each with its
// own default budget), round-robin, each handle at rate requests/s, on one
// virtual clock; outcome gives the error of attempt a (1-based) of the
// global request k.
func drive(t *testing.T, handles int, rate float64, perHandle int, outcome func(k, a int) error) []request {
	t.Helper()
	return driveRules(t, stormRules, handles, rate, perHandle, outcome)
}

// driveRules is drive under other statement rules.
func driveRules(t *testing.T, rulesText string, handles int, rate float64, perHandle int, outcome func(k, a int) error) []request {
	t.Helper()
	clock := coretest.NewClock(time.Time{})
	start := clock.Now()
	rules := mustRules(t, rulesText)
	retriers := make([]*core.Retrier, handles)
	for i := range retriers {
		var err error
		retriers[i], err = core.NewRetrier(core.Policy{Statement: rules}, core.Options{Clock: clock, Budget: defaultBudget(t)})
		require.NoError(t, err)
	}
	gap := time.Duration(float64(time.Second) / (rate * float64(handles)))
	out := make([]request, handles*perHandle)
	for k := range out {
		if d := start.Add(time.Duration(k) * gap).Sub(clock.Now()); d > 0 {
			clock.Advance(d)
		}
		h := k % handles
		out[k].handle = h
		out[k].err = retriers[h].Do(context.Background(), "update t", func(context.Context) error {
			out[k].executions++
			return outcome(k, out[k].executions)
		})
	}
	return out
}

// afterAllowance returns the executions per request of each handle after
// the first retry its budget refused, and the retries it granted before.
func afterAllowance(t *testing.T, rs []request, handles int) (perRequest []float64, allowance []int) {
	t.Helper()
	executions, requests := make([]int, handles), make([]int, handles)
	allowance = make([]int, handles)
	refused := make([]bool, handles)
	for _, r := range rs {
		if !refused[r.handle] {
			if errors.Is(r.err, core.ErrRetryBudgetExceeded) {
				refused[r.handle] = true
				allowance[r.handle] += r.executions - 1
			} else {
				allowance[r.handle] += r.executions - 1
			}
			continue
		}
		executions[r.handle] += r.executions
		requests[r.handle]++
	}
	for h := range handles {
		require.True(t, refused[h], "handle %d: the budget never refused a retry in a storm", h)
		require.NotZero(t, requests[h])
		perRequest = append(perRequest, float64(executions[h])/float64(requests[h]))
	}
	return perRequest, allowance
}

var (
	errDeadlock      = serverError{1205}
	errTimeout       = fmt.Errorf("read: %w", context.DeadlineExceeded)
	errThrottled     = serverError{40501}
	errFailover      = serverError{40613}
	errPgDeadlock    = pgState("40P01")
	errSerialization = pgState("40001")
)

// pgState is an error with a SQLSTATE, as pgx's *pgconn.PgError is.
type pgState string

func (e pgState) Error() string    { return "ERROR: SQLSTATE " + string(e) }
func (e pgState) SQLState() string { return string(e) }

// stormClasses are the failures of the storm tests, one of each class,
// with the most retries each may be given before the budget stops them
// (half of max = 10 tokens: 10 transient failures at 1, 5 overload at 2;
// the contention pool of 12.8 tokens: 128 failures at 0.1, of which a
// rule that retries 3 times retries 96).
var stormClasses = []struct {
	err       error
	allowance int
}{
	{errDeadlock, 100}, {errPgDeadlock, 100}, {errSerialization, 100},
	{errFailover, 10},
	{errTimeout, 5}, {errThrottled, 5},
}

// In a full storm (every attempt fails with a retryable error) a handle
// runs at most 1.1 executions per request once its small initial allowance
// is spent, at every request rate and for every class, deadlocks at 100%
// included: nothing refills with time.
func TestBudgetStormBoundAtEveryRate(t *testing.T) {
	for _, rate := range budgetRates {
		for _, sc := range stormClasses {
			t.Run(fmt.Sprintf("%v/s %v", rate, sc.err), func(t *testing.T) {
				rs := drive(t, 1, rate, 2000, func(int, int) error { return sc.err })
				perRequest, allowance := afterAllowance(t, rs, 1)
				assert.LessOrEqual(t, perRequest[0], 1.1, "executions per request after the allowance")
				assert.LessOrEqual(t, allowance[0], sc.allowance, "initial allowance in retries")
			})
		}
	}
}

// A fleet: 1,000 handles at 1 request/s each, every one with its own
// budget. The bound holds per handle, so the database sees about 1.0
// executions per request from the fleet too, once each handle has spent
// its allowance.
func TestBudgetStormBoundForAFleet(t *testing.T) {
	const handles = 1000
	for _, tc := range []struct {
		err       error
		perHandle int
		allowance int
	}{{errFailover, 60, 10}, {errTimeout, 60, 5}, {errDeadlock, 300, 100}} {
		t.Run(fmt.Sprint(tc.err), func(t *testing.T) {
			rs := drive(t, handles, 1, tc.perHandle, func(int, int) error { return tc.err })
			perRequest, allowance := afterAllowance(t, rs, handles)
			for h := range handles {
				require.LessOrEqual(t, perRequest[h], 1.1, "handle %d", h)
				require.LessOrEqual(t, allowance[h], tc.allowance, "handle %d", h)
			}
			executions := 0
			for _, r := range rs {
				executions += r.executions
			}
			// Allowance included: each handle retries at most its allowance.
			assert.LessOrEqual(t, float64(executions)/float64(len(rs)), 1+float64(tc.allowance)/float64(tc.perHandle))
		})
	}
}

// Contention on a healthy database: deadlock victims and serialization
// failures in bursts of 5% to 35% of all attempts (a victim's retry may
// be chosen again), SQL Server's and PostgreSQL's alike. The default
// budget retries every one of them at every rate: no transaction fails.
func TestBudgetRetriesContention(t *testing.T) {
	for _, rate := range budgetRates {
		for _, victim := range []error{errDeadlock, errPgDeadlock, errSerialization} {
			t.Run(fmt.Sprintf("%v/s %v", rate, victim), func(t *testing.T) {
				rnd := rand.New(rand.NewPCG(uint64(rate*10), 17))
				share, left := 0.0, 0
				failed := 0
				// The rule of the REPEATABLE READ workload, without waits.
				rs := driveRules(t, "{1205,40001,40P01:12,0}", 1, rate, 20000, func(k, a int) error {
					if a == 1 {
						if left == 0 { // a new burst: 50 to 500 requests at 5%, 15%, 25% or 35%
							share, left = []float64{0.05, 0.15, 0.25, 0.35}[rnd.IntN(4)], 50+rnd.IntN(451)
						}
						left--
					}
					if rnd.Float64() < share {
						failed++
						return victim
					}
					return nil
				})
				for k, r := range rs {
					require.NoError(t, r.err, "request %d", k)
				}
				assert.Greater(t, failed, len(rs)/10, "the workload had its victims")
			})
		}
	}
}

// Sporadic failures (up to 5% of first attempts, each failing once) are all
// retried at every rate, whether they come evenly or at random.
func TestBudgetRetriesSporadicFailures(t *testing.T) {
	for _, rate := range budgetRates {
		t.Run(fmt.Sprint(rate, "/s"), func(t *testing.T) {
			for _, tc := range []struct {
				name  string
				first func(k int) error // the first attempt's error, nil for a success
			}{
				{"every 20th deadlocked", func(k int) error {
					if k%20 == 7 {
						return errDeadlock
					}
					return nil
				}},
				{"every 20th timed out", func(k int) error {
					if k%20 == 7 {
						return errTimeout
					}
					return nil
				}},
				{"5% deadlocked at random", func() func(k int) error {
					rnd := rand.New(rand.NewPCG(uint64(rate*10), 12))
					return func(int) error {
						if rnd.Float64() < 0.05 {
							return errDeadlock
						}
						return nil
					}
				}()},
			} {
				failures, firsts := 0, map[int]error{}
				rs := drive(t, 1, rate, 20000, func(k, a int) error {
					if a > 1 {
						return nil
					}
					if _, ok := firsts[k]; !ok {
						firsts[k] = tc.first(k)
						if firsts[k] != nil {
							failures++
						}
					}
					return firsts[k]
				})
				for k, r := range rs {
					require.NoError(t, r.err, "%s: request %d", tc.name, k)
				}
				require.LessOrEqual(t, failures, len(rs)/20+len(rs)/100, tc.name) // about 5%
				require.Greater(t, failures, len(rs)/25, tc.name)
			}
		})
	}
}

// A partial storm of transient or overload failures (more than about 9%
// or 5% of first attempts) drains the budget and retries stop (gRPC's
// "above half" rule): each stays at or below 1.1 executions per request
// once the allowance is spent.
func TestBudgetPartialStorm(t *testing.T) {
	for _, tc := range []struct {
		err       error
		shares    []float64
		allowance int
	}{
		{errFailover, []float64{0.1, 0.2, 0.5, 0.9}, 10},
		{errTimeout, []float64{0.1, 0.2, 0.5, 0.9}, 10},
	} {
		for _, share := range tc.shares {
			t.Run(fmt.Sprint(tc.err, share), func(t *testing.T) {
				rnd := rand.New(rand.NewPCG(7, uint64(share*100)))
				rs := drive(t, 1, 100, 20000, func(int, int) error {
					if rnd.Float64() < share {
						return tc.err
					}
					return nil
				})
				executions := 0
				for _, r := range rs {
					executions += r.executions
				}
				assert.LessOrEqual(t, float64(executions-tc.allowance)/float64(len(rs)), 1.1)
			})
		}
	}
}

// Contention is retried while the database makes progress: a success
// pays for 64 contention failures, so where a share s of attempts
// succeeds, retries add at most 64·s executions per execution. A storm
// in which almost nothing succeeds (1 attempt in 1,000 or fewer, at
// random, or 1 request in 1,000 that succeeds while the others fail every
// attempt) stays at or below 1.1 executions per request once the
// allowance (at most 128 retries) is spent, at every rate; deadlocks with a
// success in 1 of 12 attempts or more (a hot row) are retried in full.
func TestBudgetContentionStormWithFewSuccesses(t *testing.T) {
	for _, rate := range []float64{0.5, 100, 10000} {
		for _, tc := range []struct {
			name    string
			outcome func(rnd *rand.Rand) func(k, a int) error
		}{
			{"1 attempt in 1,000 succeeds", func(rnd *rand.Rand) func(k, a int) error {
				return func(int, int) error {
					if rnd.Float64() < 0.001 {
						return nil
					}
					return errDeadlock
				}
			}},
			{"1 attempt in 10,000 succeeds", func(rnd *rand.Rand) func(k, a int) error {
				return func(int, int) error {
					if rnd.Float64() < 0.0001 {
						return nil
					}
					return errSerialization
				}
			}},
			{"1 request in 1,000 succeeds", func(*rand.Rand) func(k, a int) error {
				return func(k, _ int) error {
					if k%1000 == 999 {
						return nil
					}
					return errPgDeadlock
				}
			}},
		} {
			t.Run(fmt.Sprintf("%v/s %s", rate, tc.name), func(t *testing.T) {
				rs := driveRules(t, "{1205,40001,40P01:12,0}", 1, rate, 20000, tc.outcome(rand.New(rand.NewPCG(uint64(rate), 29))))
				perRequest, allowance := afterAllowance(t, rs, 1)
				assert.LessOrEqual(t, perRequest[0], 1.1, "executions per request after the allowance")
				assert.LessOrEqual(t, allowance[0], 128, "initial allowance in retries")
			})
		}
	}
	// Progress: one attempt in 12 succeeds (a hot row of 12 writers), and
	// every failure is retried.
	rnd := rand.New(rand.NewPCG(12, 29))
	rs := driveRules(t, "{1205:255,0}", 1, 100, 5000, func(int, int) error {
		if rnd.IntN(12) == 0 {
			return nil
		}
		return errDeadlock
	})
	for k, r := range rs {
		require.NoError(t, r.err, "request %d", k)
	}
}

// An error that no rule retries earns nothing, whatever the reason: no
// rule, a query filter that does not match, retries used up, a wait
// longer than queryTimeout. Only successes earn.
func TestBudgetErrorsNoRuleRetriesEarnNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rules string
		query string
		qt    time.Duration
		err   error
		n     int
	}{
		{"no rule", "{1205:3,0}", "update t", 0, errFailover, 1000},
		{"filter mismatch", "{40613:3,0+0:select}", "update t", 0, errFailover, 1000},
		// A deadlock, paid from the contention pool (10 tokens, 0.1 each):
		// the retry and the failure that used it up, 40 times.
		{"retries used up", "{1205:1,0}", "update t", 0, errDeadlock, 40},
		{"wait beyond queryTimeout", "{40613:3,10}", "update t", time.Second, errFailover, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, stormRules), QueryTimeout: tc.qt}, core.Options{Budget: defaultBudget(t)})
			ctx := context.Background()
			for range 20 {
				_ = r.Do(ctx, "select 1", func(context.Context) error { return errFailover })
			}
			require.Zero(t, r.Budget().Available(), "the storm drains the budget")
			r, _ = newRetrier(t, core.Policy{Statement: mustRules(t, tc.rules), QueryTimeout: tc.qt}, core.Options{Budget: r.Budget()})
			pool := contentionPool(r.Budget())
			for range tc.n {
				err := r.Do(ctx, tc.query, func(context.Context) error { return tc.err })
				require.Error(t, err)
				require.NotErrorIs(t, err, core.ErrRetryBudgetExceeded)
			}
			assert.Zero(t, r.Budget().Available(), "%d errors no rule retries earned nothing", tc.n)
			assert.LessOrEqual(t, contentionPool(r.Budget()), pool, "nor did they refill the contention pool")
			require.NoError(t, r.Do(ctx, tc.query, func(context.Context) error { return nil }))
			assert.InDelta(t, 0.1, r.Budget().Available(), 1e-9, "a success earns")
		})
	}
}

// The filtered storm: under {1205:3,0+0:select} every attempt fails with
// 1205 and one request in four is a SELECT. The UPDATEs' 1205s are not
// retried (the filter names only select); they earn nothing, so the
// SELECTs' retries stop once the allowance is spent: at most 1.1
// executions per request at every rate, for every class.
func TestBudgetFilteredStorm(t *testing.T) {
	for _, rate := range budgetRates {
		for _, tc := range []struct {
			err       error
			rules     string
			allowance int
		}{
			{errDeadlock, "{1205:3,0+0:select}", 100},
			{errPgDeadlock, "{40P01:3,0+0:select}", 100},
			{errFailover, "{40613:3,0+0:select}", 10},
			{errThrottled, "{40501:3,0+0:select}", 5},
		} {
			t.Run(fmt.Sprintf("%v/s %v", rate, tc.err), func(t *testing.T) {
				clock := coretest.NewClock(time.Time{})
				r, err := core.NewRetrier(core.Policy{Statement: mustRules(t, tc.rules)}, core.Options{Clock: clock, Budget: defaultBudget(t)})
				require.NoError(t, err)
				gap := time.Duration(float64(time.Second) / rate)
				executions, retries, requests := 0, 0, 0
				refused := false
				for k := range 8000 {
					clock.Advance(gap)
					query := "update t set n = n + 1"
					if k%4 == 3 {
						query = "select n from t"
					}
					n := 0
					err := r.Do(context.Background(), query, func(context.Context) error { n++; return tc.err })
					if !refused {
						retries += n - 1
						refused = errors.Is(err, core.ErrRetryBudgetExceeded)
						continue
					}
					executions += n
					requests++
				}
				require.True(t, refused, "the budget never refused a retry")
				assert.LessOrEqual(t, retries, tc.allowance, "initial allowance in retries")
				assert.LessOrEqual(t, float64(executions)/float64(requests), 1.1, "executions per request after the allowance")
			})
		}
	}
}

// After a storm retries come back as successes come back, whatever the
// time: with every 20th request failing once, the first failure is retried
// again after about 140 requests (each failure costs 1, 19 successes earn
// 1.9, retries need 10 of 20).
func TestBudgetRecoversWithSuccesses(t *testing.T) {
	r, clock := newRetrier(t, core.Policy{Statement: mustRules(t, stormRules)}, core.Options{Budget: defaultBudget(t)})
	ctx := context.Background()
	for range 100 {
		_ = r.Do(ctx, "select 1", func(context.Context) error { return errFailover })
	}
	require.Zero(t, r.Budget().Available(), "the storm drains the budget")
	clock.Advance(24 * time.Hour) // time alone brings nothing back
	calls := 0
	err := r.Do(ctx, "select 1", failing(&calls, errFailover))
	require.ErrorIs(t, err, core.ErrRetryBudgetExceeded)
	require.ErrorIs(t, err, errFailover, "the refusal wraps the driver error")

	requests := 0
	for {
		requests++
		calls := 0
		var errs []error
		if requests%20 == 0 {
			errs = []error{errFailover}
		}
		err := r.Do(ctx, "select 1", failing(&calls, errs...))
		if len(errs) > 0 && err == nil {
			break
		}
		require.Less(t, requests, 300, "retries did not come back within a few hundred requests")
	}
	assert.LessOrEqual(t, requests, 240)
	t.Logf("retries returned after %d requests", requests)
}

// Connection retries spend the same budget as statement retries.
func TestBudgetCoversConnections(t *testing.T) {
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, stormRules), ConnectRetryCount: 3, ConnectRetryInterval: time.Second}, core.Options{Budget: defaultBudget(t)})
	ctx := context.Background()
	for range 10 {
		_ = r.Do(ctx, "select 1", func(context.Context) error { return errFailover })
	}
	calls := 0
	err := r.Connect(ctx, failing(&calls, serverError{40613}))
	require.ErrorIs(t, err, core.ErrRetryBudgetExceeded, "a storm of statements leaves no connection retry")
	assert.Equal(t, 1, calls)

	r, _ = newRetrier(t, core.Policy{ConnectRetryCount: 255, ConnectRetryInterval: time.Second, LoginTimeout: time.Hour}, core.Options{Budget: defaultBudget(t)})
	calls = 0
	err = r.Connect(ctx, failing(&calls, repeat(serverError{40613}, 1000)...))
	require.ErrorIs(t, err, core.ErrRetryBudgetExceeded)
	assert.Equal(t, 11, calls, "20 tokens, a retry while 10 are left: 10 retries")
}

func TestBudgetSettingsRanges(t *testing.T) {
	for _, tc := range []struct {
		s    core.BudgetSettings
		want string
	}{
		{core.BudgetSettings{Max: -1}, "core: retry budget max=-1: expected a number from 2 to 1000000"},
		{core.BudgetSettings{Max: 1e16}, "max=1e+16: expected a number from 2 to 1000000"},
		{core.BudgetSettings{Max: 0.0001}, "max=0.0001: expected a number from 2 to 1000000"},
		{core.BudgetSettings{EarnPerAttempt: 1e17}, "earn=1e+17: expected a number from 0.001 to 1"},
		{core.BudgetSettings{EarnPerAttempt: -0.1}, "earn=-0.1: expected a number from 0.001 to 1"},
		{core.BudgetSettings{OverloadCost: 1e17}, "overloadCost=1e+17: expected a number from 0.001 to 1000"},
		{core.BudgetSettings{OverloadCost: 0.0001}, "overloadCost=0.0001: expected a number from 0.001 to 1000"},
		{core.BudgetSettings{ContentionCost: -1}, "contentionCost=-1: expected a number from 0.001 to 1000"},
		{core.BudgetSettings{ContentionPerSuccess: 0.5}, "contentionPerSuccess=0.5: expected a number from 1 to 10000"},
		{core.BudgetSettings{ContentionPerSuccess: 20000}, "contentionPerSuccess=20000: expected a number from 1 to 10000"},
		{core.BudgetSettings{Max: 3}, "max=3 with overloadCost=2: expected max of at least 2 × overloadCost (4)"},
		{core.BudgetSettings{Max: 4, ContentionCost: 3}, "max=4 with contentionCost=3: expected max of at least 2 × contentionCost (6)"},
		{core.BudgetSettings{Max: 1e6, OverloadCost: 1000, EarnPerAttempt: 1.5}, "earn=1.5"},
		{core.BudgetSettings{Contention: "1205|12x5"}, `core: retry budget contention="1205|12x5": "12x5" is not a number`},
		{core.BudgetSettings{Contention: "1205", Overload: "1205"}, "core: retry budget: 1205 is in both contention= and overload="},
	} {
		err := tc.s.Validate()
		require.Error(t, err, "%+v", tc.s)
		assert.Contains(t, err.Error(), tc.want)
		_, err = core.NewBudget(tc.s)
		assert.Error(t, err)
	}
	for _, s := range []core.BudgetSettings{{}, {Max: 2, OverloadCost: 1}, {Max: 1e6, EarnPerAttempt: 1, OverloadCost: 1000, ContentionCost: 1000},
		{EarnPerAttempt: 0.001}, {ContentionPerSuccess: 1}, {ContentionPerSuccess: 10000, ContentionCost: 1000, Max: 1e6}, {Contention: " 1205 | 40P01 timeout", Transient: "badconn"}} {
		assert.NoError(t, s.Validate(), "%+v", s)
	}
	assert.ErrorContains(t, limits.BudgetSetting("refill", 1), "max, earn, contentionCost, contentionPerSuccess or overloadCost")
}

// defaultBudget is the budget the config package gives every handle.
func defaultBudget(t *testing.T) *core.Budget {
	t.Helper()
	b, err := core.NewBudget(core.BudgetSettings{})
	require.NoError(t, err)
	return b
}

// TestBudgetBoundsOneLongRule shows what docs/semantics.md says of long
// rules: on a fresh handle the default budget lets one statement retry
// max/2 = 10 times, and retryBudget=max=60 runs all 30 retries of a rule
// written for an Azure failover.
func TestBudgetBoundsOneLongRule(t *testing.T) {
	for _, tc := range []struct {
		name       string
		settings   core.BudgetSettings
		executions int
		reason     error
	}{
		{"default", core.BudgetSettings{}, 11, core.ErrRetryBudgetExceeded},
		{"max=60", core.BudgetSettings{Max: 60}, 31, core.ErrRetriesExhausted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			budget, err := core.NewBudget(tc.settings)
			require.NoError(t, err)
			clock := coretest.NewClock(time.Time{})
			r, err := core.NewRetrier(core.Policy{Statement: mustRules(t, "{40613,40197:30,1}")},
				core.Options{Clock: clock, Budget: budget})
			require.NoError(t, err)
			executions := 0
			err = r.Do(context.Background(), "update t set n = n + 1", func(context.Context) error {
				executions++
				return serverError{40613}
			})
			assert.Equal(t, tc.executions, executions)
			assert.ErrorIs(t, err, tc.reason)
			assert.ErrorIs(t, err, serverError{40613})
		})
	}
}
