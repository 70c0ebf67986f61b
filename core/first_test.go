package core_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
)

// TestFirstOnlyWhenNobodyIsToBeAskedOrTold shows when an adapter may run a
// statement's first attempt itself: never when an observer, a breaker or
// a refresh is to be asked or told, or a queryTimeout bounds the attempt.
func TestFirstOnlyWhenNobodyIsToBeAskedOrTold(t *testing.T) {
	rules := mustRules(t, "{1205:3,1}")
	breaker := newBreaker(t, core.BreakerSettings{Failures: 5}, nil)
	for _, c := range []struct {
		name   string
		policy core.Policy
		opts   core.Options
		want   bool
	}{
		{"quiet", core.Policy{Statement: rules}, core.Options{}, true},
		{"budget", core.Policy{Statement: rules}, core.Options{Budget: defaultBudget(t)}, true},
		{"observer", core.Policy{Statement: rules}, core.Options{Observer: &coretest.Observer{}}, false},
		// Retry runs its first attempt directly under an observer that
		// only counts; First leaves that to Retry (TestCountingObserver...).
		{"observer that only counts", core.Policy{Statement: rules}, core.Options{Observer: &untimedObserver{}}, false},
		{"breaker", core.Policy{Statement: rules}, core.Options{Breaker: breaker}, false},
		{"refresh", core.Policy{Statement: rules}, core.Options{Refresh: func() {}}, false},
		{"queryTimeout", core.Policy{Statement: rules, QueryTimeout: time.Second}, core.Options{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, _ := newRetrier(t, c.policy, c.opts)
			_, ok := r.First()
			assert.Equal(t, c.want, ok)
		})
	}

	// A policy set later decides too: a queryTimeout takes the direct
	// path away, and removing it gives it back.
	r, _ := newRetrier(t, core.Policy{Statement: rules}, core.Options{})
	require.NoError(t, r.SetPolicy(core.Policy{Statement: rules, QueryTimeout: time.Second}))
	_, ok := r.First()
	assert.False(t, ok, "queryTimeout set by SetPolicy")
	require.NoError(t, r.SetPolicy(core.Policy{Statement: rules}))
	_, ok = r.First()
	assert.True(t, ok)
}

// TestRetryAfterIsTheRestOfRetry runs the same failing statement through
// Retry and through First + RetryAfter: the attempts, the waits and the
// error are the same.
func TestRetryAfterIsTheRestOfRetry(t *testing.T) {
	deadlock := serverError{1205}
	for _, c := range []struct {
		name     string
		query    string
		failures int
		attempts int
		waits    []time.Duration
		wantErr  error // nil: succeeds
		same     bool  // the error is the driver's, unchanged
	}{
		{"succeeds on a retry", "update t set a = 1", 2, 3, coretest.Seconds(2, 4), nil, false},
		{"retries used up", "update t set a = 1", 9, 4, coretest.Seconds(2, 4, 8), core.ErrRetriesExhausted, false},
		{"filter does not match", "delete from t", 9, 1, nil, nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			policy := core.Policy{Statement: mustRules(t, "{1205:3,2*2:select,update}")}
			run := func(calls *int) func(context.Context) (int, error) {
				return func(context.Context) (int, error) {
					*calls++
					if *calls <= c.failures {
						return 0, deadlock
					}
					return 7, nil
				}
			}

			r1, clock1 := newRetrier(t, policy, core.Options{})
			calls1 := 0
			v1, err1 := core.Retry(context.Background(), r1, c.query, run(&calls1))

			r2, clock2 := newRetrier(t, policy, core.Options{})
			calls2 := 0
			fn := run(&calls2)
			a, ok := r2.First()
			require.True(t, ok)
			v2, err2 := fn(context.Background())
			require.Error(t, err2, "the first attempt fails in every case")
			v2, err2 = core.RetryAfter(context.Background(), a, c.query, fn, err2)

			for _, got := range []struct {
				v, calls int
				err      error
				waits    []time.Duration
			}{{v1, calls1, err1, clock1.Sleeps()}, {v2, calls2, err2, clock2.Sleeps()}} {
				assert.Equal(t, c.attempts, got.calls, "attempts")
				assert.Equal(t, c.waits, got.waits, "waits")
				switch {
				case c.same:
					assert.Equal(t, error(deadlock), got.err, "returned unchanged")
				case c.wantErr == nil:
					require.NoError(t, got.err)
					assert.Equal(t, 7, got.v)
				default:
					assert.ErrorIs(t, got.err, c.wantErr)
					var se serverError
					assert.True(t, errors.As(got.err, &se), "unwraps to the driver error")
				}
			}
		})
	}
}

// TestFirstAttemptSucceededEarns shows that a direct success feeds the
// retry budget as a success inside the loop does.
func TestFirstAttemptSucceededEarns(t *testing.T) {
	budget := defaultBudget(t)
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:1,1}")}, core.Options{Budget: budget})
	// Spend some of the budget: a retry that fails again.
	calls := 0
	err := r.Do(context.Background(), "update t", failing(&calls, serverError{1205}, serverError{1205}))
	require.ErrorIs(t, err, core.ErrRetriesExhausted)
	before := budget.Available()
	require.Less(t, before, 20.0, "the default budget holds 20 retries when full")

	a, ok := r.First()
	require.True(t, ok)
	a.Succeeded()
	assert.Greater(t, budget.Available(), before)
}

// TestRetryRowsAfterKeepsTheContext shows that RetryRowsAfter is
// RetryRows' rest: a retried attempt's context is not cancelled when it
// returns (its rows are read afterwards).
func TestRetryRowsAfterKeepsTheContext(t *testing.T) {
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:1,1}")}, core.Options{})
	a, ok := r.First()
	require.True(t, ok)
	var kept context.Context
	_, err := core.RetryRowsAfter(context.Background(), a, "select 1", func(ctx context.Context) (int, error) {
		kept = ctx
		return 1, nil
	}, serverError{1205})
	require.NoError(t, err)
	assert.NoError(t, kept.Err(), "the retried attempt's context lives on for its rows")
}

// TestRetryAfterWithoutAFailedFirstAttempt: a nil error, or an attempt
// that First did not allow, is a clear error, not a silent zero value.
func TestRetryAfterWithoutAFailedFirstAttempt(t *testing.T) {
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:1,1}")}, core.Options{})
	a, ok := r.First()
	require.True(t, ok)
	calls := 0
	fn := func(context.Context) (int, error) { calls++; return 1, nil }
	_, err := core.RetryAfter(context.Background(), a, "select 1", fn, nil)
	assert.ErrorIs(t, err, core.ErrNoFirstAttempt)
	_, err = core.RetryRowsAfter(context.Background(), core.FirstAttempt{}, "select 1", fn, serverError{1205})
	assert.ErrorIs(t, err, core.ErrNoFirstAttempt)
	counted, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:1,1}")}, core.Options{Observer: &untimedObserver{}})
	declined, ok := counted.First()
	require.False(t, ok)
	_, err = core.RetryAfter(context.Background(), declined, "select 1", fn, serverError{1205})
	assert.ErrorIs(t, err, core.ErrNoFirstAttempt, "an attempt that First declined")
	assert.Zero(t, calls, "nothing runs")
}

// untimedObserver is events_test's countingObserver that does not read
// Elapsed, as a metrics hook does.
type untimedObserver struct{ countingObserver }

func (o *untimedObserver) WantsElapsed() bool { return false }

// nowCounter is a virtual clock that counts how often it is read.
type nowCounter struct {
	*coretest.Clock
	nows atomic.Int64
}

func (c *nowCounter) Now() time.Time { c.nows.Add(1); return c.Clock.Now() }

// TestCountingObserverKeepsTheDirectPath: under an observer that only
// counts operations (an OperationObserver whose WantsElapsed is false,
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
	assert.Equal(t, int64(3), obs.ops[core.KindStatement].Load(), "operations counted")
	assert.Zero(t, clock.nows.Load(), "the success path read the clock")

	calls := 0
	require.NoError(t, r.Do(ctx, "update t", failing(&calls, serverError{1205})))
	assert.Equal(t, int64(4), obs.ops[core.KindStatement].Load(), "a retried statement is one operation")

	v, err := core.Retry(ctx, r, "update t", func(context.Context) (int, error) { return 1, nil })
	require.NoError(t, err)
	assert.Equal(t, 1, v)
	calls = 0
	_, err = core.Retry(ctx, r, "update t", func(context.Context) (int, error) {
		if calls++; calls == 1 {
			return 0, serverError{1205}
		}
		return 2, nil
	})
	require.NoError(t, err)
	assert.Equal(t, int64(6), obs.ops[core.KindStatement].Load(), "Retry counts each operation once")
	assert.Zero(t, clock.nows.Load(), "no clock read for an observer that does not time")

	snap := obs.Snapshot()
	require.Len(t, snap.Retries, 2)
	require.Len(t, snap.Successes, 2)
	for _, e := range snap.Retries {
		assert.Zero(t, e.Elapsed)
	}
	for _, e := range snap.Successes {
		assert.Zero(t, e.Elapsed)
	}
}
