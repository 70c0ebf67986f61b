package core_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
)

// untimedObserver is events_test's countingObserver without
// OperationEnded, as a metrics hook that counts and does not time: it
// forwards the Observer methods alone.
type untimedObserver struct{ c countingObserver }

func (o *untimedObserver) Operation(k core.Kind)                { o.c.Operation(k) }
func (o *untimedObserver) RetryScheduled(e core.RetryScheduled) { o.c.RetryScheduled(e) }
func (o *untimedObserver) RetryContext(ctx context.Context, e core.RetryScheduled) context.Context {
	return o.c.RetryContext(ctx, e)
}
func (o *untimedObserver) GaveUp(e core.GaveUp)               { o.c.GaveUp(e) }
func (o *untimedObserver) Succeeded(e core.Succeeded)         { o.c.Succeeded(e) }
func (o *untimedObserver) RulesReloaded(e core.RulesReloaded) { o.c.RulesReloaded(e) }

// nowCounter is a virtual clock that counts how often it is read.
type nowCounter struct {
	*coretest.Clock
	nows atomic.Int64
}

func (c *nowCounter) Now() time.Time { c.nows.Add(1); return c.Clock.Now() }

// TestCountingObserverKeepsTheDirectPath: under an observer that only
// counts operations (an Observer without OperationEnded,
// such as hooks/prometheus) Do and Retry run a statement's first attempt
// directly and read no clock on the success path (BenchmarkSuccessObserved
// shows the cost); every operation is counted once, whether its first
// attempt succeeded or failed and was retried; its events carry Elapsed 0.
func TestCountingObserverKeepsTheDirectPath(t *testing.T) {
	obs := &untimedObserver{}
	clock := &nowCounter{Clock: coretest.NewClock(time.Time{})}
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:2,1}")}, core.Options{Observer: obs, Clock: clock})
	ctx := context.Background()

	for range 3 {
		require.NoError(t, r.Do(ctx, "update t", func(context.Context) error { return nil }))
	}
	assert.Equal(t, int64(3), obs.c.ops[core.KindStatement].Load(), "operations counted")
	assert.Zero(t, clock.nows.Load(), "the success path read the clock")

	calls := 0
	require.NoError(t, r.Do(ctx, "update t", failing(&calls, serverError{1205})))
	assert.Equal(t, int64(4), obs.c.ops[core.KindStatement].Load(), "a retried statement is one operation")

	v, err := runValue(ctx, r, core.Op{Query: "update t"}, func(context.Context) (int, error) { return 1, nil })
	require.NoError(t, err)
	assert.Equal(t, 1, v)
	calls = 0
	_, err = runValue(ctx, r, core.Op{Query: "update t"}, func(context.Context) (int, error) {
		if calls++; calls == 1 {
			return 0, serverError{1205}
		}
		return 2, nil
	})
	require.NoError(t, err)
	assert.Equal(t, int64(6), obs.c.ops[core.KindStatement].Load(), "a statement with a value counts once")
	assert.Zero(t, clock.nows.Load(), "no clock read for an observer that does not time")

	snap := obs.c.Snapshot()
	require.Len(t, snap.Retries, 2)
	require.Len(t, snap.Successes, 2)
	for _, e := range snap.Retries {
		assert.Zero(t, e.Elapsed)
	}
	for _, e := range snap.Successes {
		assert.Zero(t, e.Elapsed)
	}
}

// TestDirectSaysWhoMustBeAskedFirst: a statement's first attempt may run
// outside Run (Direct, and DirectLean where it answers) only when nobody is asked or told before it and no
// queryTimeout bounds it; its success must be given to Run (settle) when
// an observer counts operations or the budget is not full, and then Run
// counts it once and lets the budget earn; a failure given to Run is
// counted once and retried as Run's own.
func TestDirectSaysWhoMustBeAskedFirst(t *testing.T) {
	rules := mustRules(t, "{1205:2,1}")
	ctx := context.Background()
	breaker, err := core.NewBreaker(core.BreakerSettings{Failures: 5}, nil)
	require.NoError(t, err)
	for _, tc := range []struct {
		name                 string
		p                    core.Policy
		o                    core.Options
		direct, settle, lean bool
	}{
		{"nothing", core.Policy{Statement: rules}, core.Options{}, true, false, true},
		{"full budget", core.Policy{Statement: rules}, core.Options{Budget: defaultBudget(t)}, true, false, true},
		{"counting observer", core.Policy{Statement: rules}, core.Options{Observer: &untimedObserver{}}, true, true, false},
		{"timed observer", core.Policy{Statement: rules}, core.Options{Observer: &endObserver{}}, false, false, false},
		{"breaker", core.Policy{Statement: rules}, core.Options{Breaker: breaker}, false, false, true},
		{"queryTimeout", core.Policy{Statement: rules, QueryTimeout: time.Second}, core.Options{}, false, false, true},
		{"refresh", core.Policy{Statement: rules}, core.Options{Refresh: func() {}}, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newRetrier(t, tc.p, tc.o)
			// DirectLean answers as Direct for a Retrier without Refresh
			// and an observer, and says lean false, and nothing else, for
			// one with either.
			leanDirect, leanSettle, lean := r.DirectLean()
			require.Equal(t, tc.lean, lean, "lean")
			direct, settle := r.Direct()
			assert.Equal(t, tc.direct, direct, "direct")
			if direct {
				assert.Equal(t, tc.settle, settle, "settle")
			}
			if lean {
				assert.Equal(t, [2]bool{direct, settle}, [2]bool{leanDirect, leanSettle}, "DirectLean as Direct")
			} else {
				assert.False(t, leanDirect || leanSettle, "not lean: nothing else")
			}
		})
	}

	refreshed := 0
	r, _ := newRetrier(t, core.Policy{Statement: rules}, core.Options{Refresh: func() { refreshed++ }})
	r.Direct()
	assert.Equal(t, 1, refreshed, "Direct starts an operation: the policy is refreshed first")

	obs := &untimedObserver{}
	b := defaultBudget(t)
	r, _ = newRetrier(t, core.Policy{Statement: rules}, core.Options{Observer: obs, Budget: b})
	require.NoError(t, r.Run(ctx, &core.Op{Ran: true, Query: "update t"}, nil), "a success given to Run")
	assert.EqualValues(t, 1, obs.c.ops[core.KindStatement].Load(), "counted once")

	calls := 0
	err = r.Run(ctx, &core.Op{Ran: true, Query: "update t", Err: serverError{1205}}, failing(&calls, serverError{1205}))
	require.NoError(t, err, "the failure of a direct attempt is retried")
	assert.Equal(t, 2, calls, "only the retries ran in Run")
	assert.EqualValues(t, 2, obs.c.ops[core.KindStatement].Load(), "a retried statement is one operation")

	r, _ = newRetrier(t, core.Policy{Statement: rules}, core.Options{Budget: b})
	level := func() float64 {
		c, _ := b.Tokens("contention")
		return c + b.Available()
	}
	full := level()
	calls = 0
	err = r.Run(ctx, &core.Op{Ran: true, Query: "update t", Err: serverError{1205}}, failing(&calls, serverError{1205}, serverError{1205}))
	require.ErrorIs(t, err, core.ErrRetriesExhausted)
	below := level()
	require.Less(t, below, full, "the retries drew on the budget")
	_, settle := r.Direct()
	require.True(t, settle, "a budget below full earns from a success: it settles")
	require.NoError(t, r.Run(ctx, &core.Op{Ran: true, Query: "update t"}, nil))
	assert.Greater(t, level(), below, "the success given to Run earned")
}

// TestHoldTakesFirstAttemptsOffTheDirectPath: while a hold holds, Direct
// and DirectLean answer not direct and Run runs a statement through the
// loop (as it does with nobody to ask, its outcome the same); holds add
// up, a second release does nothing, and a policy set meanwhile keeps
// them.
func TestHoldTakesFirstAttemptsOffTheDirectPath(t *testing.T) {
	rules := mustRules(t, "{1205:2,1}")
	r, _ := newRetrier(t, core.Policy{Statement: rules}, core.Options{})
	direct := func() bool {
		d, _ := r.Direct()
		dl, _, _ := r.DirectLean()
		require.Equal(t, d, dl, "DirectLean as Direct")
		return d
	}
	require.True(t, direct())
	release1 := r.Hold()
	assert.False(t, direct(), "held")
	release2 := r.Hold()
	release1()
	release1()
	assert.False(t, direct(), "held by the second hold; a second release does nothing")
	require.NoError(t, r.SetPolicy(core.Policy{Statement: rules}))
	assert.False(t, direct(), "a new policy keeps the hold")
	calls := 0
	require.NoError(t, r.Run(context.Background(), nil, failing(&calls, serverError{1205})), "held, Run still retries")
	assert.Equal(t, 2, calls)
	release2()
	assert.True(t, direct(), "every hold released")
}
