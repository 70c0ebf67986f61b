package core_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
)

// endObserver records every OperationEnded beside the other events.
type endObserver struct {
	coretest.Observer
	mu   sync.Mutex
	ends []core.OperationEnded
}

func (o *endObserver) OperationEnded(e core.OperationEnded) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ends = append(o.ends, e)
}

func (o *endObserver) ended() []core.OperationEnded {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]core.OperationEnded(nil), o.ends...)
}

var _ core.Observer = (*endObserver)(nil)

func TestOperationEndedOncePerOperation(t *testing.T) {
	obs := &endObserver{}
	r, clock := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:2,1}"), ConnectRetryCount: 1},
		core.Options{Observer: obs})
	ctx := context.Background()
	calls := 0
	require.NoError(t, r.Do(ctx, "select 1", func(context.Context) error {
		clock.Advance(3 * time.Millisecond)
		return nil
	}))
	require.NoError(t, r.Do(ctx, "select 2", failing(&calls, serverError{1205})))
	_, err := runValue(ctx, r, core.Op{Query: "select 3"}, func(context.Context) (int, error) { return 0, serverError{2627} })
	require.Error(t, err)
	require.NoError(t, r.DoTx(ctx, func(context.Context) (string, error) { return "", nil }))
	require.NoError(t, r.Connect(ctx, func(context.Context) error { return nil }))

	ends := obs.ended()
	require.Len(t, ends, 5)
	assert.Equal(t, core.OperationEnded{Context: ctx, Kind: core.KindStatement, Query: "select 1", Elapsed: 3 * time.Millisecond}, ends[0],
		"a first attempt's success is told, timed, with no Op: it emitted no other event")
	assert.NotZero(t, ends[1].Op, "a retried operation carries the Op of its events")
	assert.Equal(t, obs.Snapshot().Successes[0].Op, ends[1].Op)
	assert.Equal(t, time.Second, ends[1].Elapsed, "the wait of the retry is part of the operation")
	assert.NoError(t, ends[1].Err)
	assert.Equal(t, serverError{2627}, ends[2].Err, "the error the operation returned")
	assert.Equal(t, core.KindTransaction, ends[3].Kind)
	assert.Equal(t, core.KindConnection, ends[4].Kind)
	for _, e := range ends {
		assert.False(t, e.Panicked)
	}
}

func TestOperationEndedOnPanicThenThePanicGoesOn(t *testing.T) {
	for _, withBreaker := range []bool{false, true} {
		obs := &endObserver{}
		o := core.Options{Observer: obs}
		if withBreaker {
			b, err := core.NewBreaker(core.BreakerSettings{Failures: 1, OpenFor: time.Minute}, nil)
			require.NoError(t, err)
			o.Breaker = b
		}
		r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:2,1}")}, o)
		tx := 0
		recovered := func() (v any) {
			defer func() { v = recover() }()
			_ = r.DoTx(context.Background(), func(context.Context) (string, error) {
				if tx++; tx == 1 {
					return "update t", serverError{1205}
				}
				panic("boom")
			})
			return nil
		}()
		assert.Equal(t, "boom", recovered, "the caller recovers the operation's own panic value")
		ends := obs.ended()
		require.Len(t, ends, 1)
		assert.True(t, ends[0].Panicked)
		assert.Equal(t, "boom", ends[0].Panic)
		assert.NoError(t, ends[0].Err)
		assert.Equal(t, obs.Snapshot().Retries[0].Op, ends[0].Op, "the panic ends the retried operation of the RetryScheduled")
		if withBreaker {
			assert.True(t, o.Breaker.Open(), "the breaker still counts the panic as a failure")
		}
	}
}

func TestOperationEndedOnGoexit(t *testing.T) {
	obs := &endObserver{}
	r, _ := newRetrier(t, core.Policy{}, core.Options{Observer: obs})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.Do(context.Background(), "select 1", func(context.Context) error {
			runtime.Goexit()
			return nil
		})
	}()
	<-done
	ends := obs.ended()
	require.Len(t, ends, 1)
	assert.True(t, ends[0].Panicked)
	assert.Nil(t, ends[0].Panic, "a Goexit has no value and is not turned into a panic")
}

// panickyEnd panics in OperationEnded itself.
type panickyEnd struct{ core.NopObserver }

func (panickyEnd) OperationEnded(core.OperationEnded) { panic("observer") }

func TestOperationEndedKeepsTheOperationsPanic(t *testing.T) {
	r, _ := newRetrier(t, core.Policy{}, core.Options{Observer: panickyEnd{}})
	recovered := func() (v any) {
		defer func() { v = recover() }()
		_ = r.Do(context.Background(), "select 1", func(context.Context) error { panic("operation") })
		return nil
	}()
	assert.Equal(t, "operation", recovered)
}

func TestOperationEndedNotForARefusedOperation(t *testing.T) {
	obs := &endObserver{}
	b, err := core.NewBreaker(core.BreakerSettings{Failures: 1, OpenFor: time.Minute}, nil)
	require.NoError(t, err)
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:1,1}")}, core.Options{Observer: obs, Breaker: b})
	boom := serverError{1205}
	require.ErrorIs(t, r.Do(context.Background(), "select 1", func(context.Context) error { return boom }), boom)
	require.True(t, errors.Is(r.Do(context.Background(), "select 1", func(context.Context) error { return nil }), core.ErrCircuitOpen))
	assert.Len(t, obs.ended(), 1, "the refused operation ends with its GaveUp")
	assert.Len(t, obs.Snapshot().GiveUps, 2, "exhausted, then circuit_open")
}

func TestOperationEndedOnAPanicInAConnection(t *testing.T) {
	obs := &endObserver{}
	r, _ := newRetrier(t, core.Policy{ConnectRetryCount: 1}, core.Options{Observer: obs})
	assert.PanicsWithValue(t, "driver", func() {
		_ = r.Connect(context.Background(), func(context.Context) error { panic("driver") })
	})
	ends := obs.ended()
	require.Len(t, ends, 1)
	assert.Equal(t, core.KindConnection, ends[0].Kind)
	assert.True(t, ends[0].Panicked)
	assert.Equal(t, "driver", ends[0].Panic)
}
