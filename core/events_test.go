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

// countingObserver records the events and counts operations by kind, the
// way a metrics hook does: one atomic add per operation.
type countingObserver struct {
	coretest.Observer
	ops [3]atomic.Int64
}

func (o *countingObserver) Operation(k core.Kind) { o.ops[k].Add(1) }

var _ core.Observer = (*countingObserver)(nil)

type ctxKey struct{}

func TestOperationCountsEveryOperationOnce(t *testing.T) {
	obs := &countingObserver{}
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:2,1}"), ConnectRetryCount: 2},
		core.Options{Observer: obs})
	ctx := context.Background()
	calls := 0
	require.NoError(t, r.Do(ctx, "select 1", failing(&calls)))
	require.NoError(t, r.Do(ctx, "select 1", failing(&calls, serverError{1205})))
	_, err := runValue(ctx, r, core.Op{Query: "select 1"}, func(context.Context) (int, error) { return 1, nil })
	require.NoError(t, err)
	tx := 0
	require.NoError(t, r.DoTx(ctx, func(context.Context) (string, error) {
		if tx++; tx == 1 {
			return "update t", serverError{1205}
		}
		return "", nil
	}))
	logins := 0
	require.NoError(t, r.Connect(ctx, func(context.Context) error {
		if logins++; logins == 1 {
			return serverError{40613}
		}
		return nil
	}))
	assert.EqualValues(t, 3, obs.ops[core.KindStatement].Load(), "statements: one per Do/Retry, retries not counted")
	assert.EqualValues(t, 1, obs.ops[core.KindTransaction].Load(), "one per transaction unit, however many times it ran")
	assert.EqualValues(t, 1, obs.ops[core.KindConnection].Load(), "one per Connect, however many logins it took")
}

func TestEventsCarryContextAndOneOpPerOperation(t *testing.T) {
	obs := &coretest.Observer{}
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:1,1}")}, core.Options{Observer: obs})
	ctx := context.WithValue(context.Background(), ctxKey{}, "caller")
	calls := 0
	require.Error(t, r.Do(ctx, "update t", failing(&calls, serverError{1205}, serverError{1205})))
	calls = 0
	require.NoError(t, r.Do(ctx, "update t", failing(&calls, serverError{1205})))
	ev := obs.Snapshot()
	require.Len(t, ev.Retries, 2)
	require.Len(t, ev.GiveUps, 1)
	require.Len(t, ev.Successes, 1)
	first, second := ev.Retries[0].Op, ev.Retries[1].Op
	assert.NotZero(t, first)
	assert.NotEqual(t, first, second, "two operations, two Ops")
	assert.Equal(t, first, ev.GiveUps[0].Op, "the give-up belongs to the first operation")
	assert.Equal(t, second, ev.Successes[0].Op)
	for _, c := range []context.Context{ev.Retries[0].Context, ev.Retries[1].Context, ev.GiveUps[0].Context, ev.Successes[0].Context} {
		require.NotNil(t, c)
		assert.Equal(t, "caller", c.Value(ctxKey{}), "the caller's context")
	}

	// Another Retrier numbers its operations from another base.
	r2, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:1,1}")}, core.Options{Observer: obs})
	calls = 0
	require.NoError(t, r2.Do(ctx, "update t", failing(&calls, serverError{1205})))
	assert.NotContains(t, []uint64{first, second}, obs.Snapshot().Retries[2].Op)
}

// Elapsed counts from the start of the first attempt, so the time the
// first attempt took (a lock wait before the deadlock, say) is in it.
func TestSucceededElapsedFromFirstAttempt(t *testing.T) {
	obs := &coretest.Observer{}
	r, clock := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:2,1}")}, core.Options{Observer: obs})
	calls := 0
	require.NoError(t, r.Do(context.Background(), "update t", func(context.Context) error {
		calls++
		clock.Advance(3 * time.Second) // every attempt runs 3 s
		if calls == 1 {
			return serverError{1205}
		}
		return nil
	}))
	s := obs.Snapshot().Successes
	require.Len(t, s, 1)
	assert.Equal(t, 7*time.Second, s[0].Elapsed, "3 s first attempt + 1 s wait + 3 s second attempt")

	logins := 0
	require.NoError(t, r.Connect(context.Background(), func(context.Context) error {
		clock.Advance(2 * time.Second)
		if logins++; logins == 1 {
			return serverError{40613}
		}
		return nil
	}))
	s = obs.Snapshot().Successes
	require.Len(t, s, 2)
	assert.Equal(t, 4*time.Second, s[1].Elapsed, "two 2 s logins, the first retry is immediate")
}

// A transaction's events name the statement that failed, also the
// success after the retry (whose own attempt failed nowhere).
func TestTransactionEventsCarryTheFailedStatement(t *testing.T) {
	obs := &coretest.Observer{}
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:3,1}")}, core.Options{Observer: obs})
	runs := 0
	require.NoError(t, r.DoTx(context.Background(), func(context.Context) (string, error) {
		switch runs++; runs {
		case 1:
			return "update accounts set x = 1", serverError{1205}
		case 2:
			return "insert into audit values (1)", serverError{1205}
		}
		return "", nil
	}))
	ev := obs.Snapshot()
	require.Len(t, ev.Retries, 2)
	assert.Equal(t, "update accounts set x = 1", ev.Retries[0].Query)
	assert.Equal(t, "insert into audit values (1)", ev.Retries[1].Query)
	require.Len(t, ev.Successes, 1)
	assert.Equal(t, "insert into audit values (1)", ev.Successes[0].Query, "the statement that failed last")
	assert.Equal(t, core.KindTransaction, ev.Successes[0].Kind)

	runs = 0
	err := r.DoTx(context.Background(), func(context.Context) (string, error) {
		runs++
		return "delete from t", serverError{1205}
	})
	require.Error(t, err)
	gu := obs.Snapshot().GiveUps
	require.Len(t, gu, 1)
	assert.Equal(t, "delete from t", gu[0].Query)
	assert.True(t, errors.Is(gu[0].Reason, core.ErrRetriesExhausted))
}

// With an observer that counts operations, the success path still
// allocates nothing.
func TestDoSuccessWithCountingObserverAllocatesNothing(t *testing.T) {
	obs := &countingObserver{}
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:3,2*2}")}, core.Options{Observer: obs})
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		_ = r.Do(ctx, "select 1", func(context.Context) error { return nil })
	})
	assert.Zero(t, allocs)
	assert.EqualValues(t, 1001, obs.ops[core.KindStatement].Load())
}

// BenchmarkDoSuccessObserved is the success path of the statement loop
// without an observer, with an Observer that does not count operations, and
// with one that does (one atomic add); all allocate nothing. The hooks
// modules have the same benchmark with their real observers.
func BenchmarkDoSuccessObserved(b *testing.B) {
	coretest.BenchmarkSuccessObserved(b, coretest.ObserverCase{Name: "none"},
		coretest.ObserverCase{Name: "observer", Observer: core.NopObserver{}},
		coretest.ObserverCase{Name: "operation-observer", Observer: &countingObserver{}})
}

type retryCtxKey struct{}

// ctxObserver gives the retries of every operation a context with a value.
type ctxObserver struct{ core.NopObserver }

func (ctxObserver) RetryContext(ctx context.Context, e core.RetryScheduled) context.Context {
	return context.WithValue(ctx, retryCtxKey{}, e.Attempt)
}

// An observer's RetryContext is the one of the retried attempts, in every
// loop: a tracing hook's retry span becomes their parent.
func TestRetryContextGivesTheRetriesItsContext(t *testing.T) {
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:2,0}"), ConnectRetryCount: 2, ConnectRetryInterval: time.Second},
		core.Options{Observer: ctxObserver{}})
	var seen []any
	record := func(ctx context.Context) error {
		seen = append(seen, ctx.Value(retryCtxKey{}))
		if len(seen) < 3 {
			return serverError{1205}
		}
		return nil
	}
	require.NoError(t, r.Do(context.Background(), "update t set n = 1", record))
	assert.Equal(t, []any{nil, 1, 2}, seen, "statement: the first attempt has the caller's context, each retry the observer's")

	seen = nil
	require.NoError(t, r.DoTx(context.Background(), func(ctx context.Context) (string, error) { return "update t", record(ctx) }))
	assert.Equal(t, []any{nil, 1, 2}, seen, "transaction")

	seen = nil
	require.NoError(t, r.Connect(context.Background(), func(ctx context.Context) error {
		seen = append(seen, ctx.Value(retryCtxKey{}))
		if len(seen) < 2 {
			return serverError{40613}
		}
		return nil
	}))
	assert.Equal(t, []any{nil, 1}, seen, "connection")
}
