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
)

// The rates of the acceptance line, in requests per second per handle.
var budgetRates = []float64{0.5, 1, 2, 5, 10, 100, 1000, 10000}

// stormRules retries deadlocks and time-outs 3 times at once: with no
// wait, the virtual time is exactly the arrival time of the requests, so
// any dependence of the budget on time shows at its full size.
const stormRules = "{1205,timeout:3,0}"

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
	clock := coretest.NewClock(time.Time{})
	start := clock.Now()
	rules := mustRules(t, stormRules)
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
	errDeadlock = serverError{1205}
	errTimeout  = fmt.Errorf("read: %w", context.DeadlineExceeded)
)

// In a full storm (every attempt fails with a retryable error) a handle
// runs at most 1.1 executions per request once its small initial allowance
// is spent, at every request rate: nothing refills with time.
func TestBudgetStormBoundAtEveryRate(t *testing.T) {
	for _, rate := range budgetRates {
		for _, fail := range []error{errDeadlock, errTimeout} {
			t.Run(fmt.Sprintf("%v/s %v", rate, fail), func(t *testing.T) {
				rs := drive(t, 1, rate, 2000, func(int, int) error { return fail })
				perRequest, allowance := afterAllowance(t, rs, 1)
				assert.LessOrEqual(t, perRequest[0], 1.1, "executions per request after the allowance")
				assert.LessOrEqual(t, allowance[0], 10, "initial allowance in retries")
			})
		}
	}
}

// A fleet: 1,000 handles at 1 request/s each, every one with its own
// budget. The bound holds per handle, so the database sees about 1.0
// executions per request from the fleet too.
func TestBudgetStormBoundForAFleet(t *testing.T) {
	const handles = 1000
	rs := drive(t, handles, 1, 60, func(int, int) error { return errDeadlock })
	perRequest, allowance := afterAllowance(t, rs, handles)
	for h := range handles {
		require.LessOrEqual(t, perRequest[h], 1.1, "handle %d", h)
		require.LessOrEqual(t, allowance[h], 10, "handle %d", h)
	}
	executions := 0
	for _, r := range rs {
		executions += r.executions
	}
	// Allowance included: 60 requests per handle, at most 10 retries each.
	assert.LessOrEqual(t, float64(executions)/float64(len(rs)), 1+10.0/60)
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

// When more than about 9% of first attempts fail, the budget drains and
// retries stop (gRPC's "above half" rule): a partial storm stays at or
// below 1.1 executions per request too.
func TestBudgetPartialStorm(t *testing.T) {
	for _, share := range []float64{0.1, 0.2, 0.5, 0.9} {
		t.Run(fmt.Sprint(share), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(7, uint64(share*100)))
			rs := drive(t, 1, 100, 20000, func(int, int) error {
				if rnd.Float64() < share {
					return errDeadlock
				}
				return nil
			})
			executions := 0
			for _, r := range rs {
				executions += r.executions
			}
			assert.LessOrEqual(t, float64(executions-10)/float64(len(rs)), 1.1)
		})
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
		_ = r.Do(ctx, "select 1", func(context.Context) error { return errDeadlock })
	}
	require.Zero(t, r.Budget().Available(), "the storm drains the budget")
	clock.Advance(24 * time.Hour) // time alone brings nothing back
	calls := 0
	err := r.Do(ctx, "select 1", failing(&calls, errDeadlock))
	require.ErrorIs(t, err, core.ErrRetryBudgetExceeded)
	require.ErrorIs(t, err, errDeadlock, "the refusal wraps the driver error")

	requests := 0
	for {
		requests++
		calls := 0
		var errs []error
		if requests%20 == 0 {
			errs = []error{errDeadlock}
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
		_ = r.Do(ctx, "select 1", func(context.Context) error { return errDeadlock })
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
		{core.BudgetSettings{TimeoutCost: 1e17}, "timeoutCost=1e+17: expected a number from 1 to 1000"},
		{core.BudgetSettings{TimeoutCost: 0.5}, "timeoutCost=0.5: expected a number from 1 to 1000"},
		{core.BudgetSettings{Max: 3}, "max=3 with timeoutCost=2: expected max of at least 2 × timeoutCost (4)"},
		{core.BudgetSettings{Max: 1e6, TimeoutCost: 1000, EarnPerAttempt: 1.5}, "earn=1.5"},
	} {
		err := tc.s.Validate()
		require.Error(t, err, "%+v", tc.s)
		assert.Contains(t, err.Error(), tc.want)
		_, err = core.NewBudget(tc.s)
		assert.Error(t, err)
	}
	for _, s := range []core.BudgetSettings{{}, {Max: 2, TimeoutCost: 1}, {Max: 1e6, EarnPerAttempt: 1, TimeoutCost: 1000}, {EarnPerAttempt: 0.001}} {
		assert.NoError(t, s.Validate(), "%+v", s)
	}
	assert.ErrorContains(t, core.CheckBudgetSetting("refill", 1), "max, earn or timeoutCost")
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
