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
