package core_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/internal/tables/limits"
)

func TestBreaker(t *testing.T) {
	clock := coretest.NewClock(time.Time{})
	breaker := newBreaker(t, core.BreakerSettings{Failures: 3, OpenFor: 10 * time.Second}, clock)
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:1,0}")}, core.Options{Clock: clock, Breaker: breaker}) // the breaker alone
	ctx := context.Background()
	executions := 0
	deadlock := func(context.Context) error { executions++; return serverError{1205} }
	ok := func(context.Context) error { executions++; return nil }

	// Two failed operations, then a success: the count starts again.
	_ = r.Do(ctx, "update t set n = n + 1", deadlock)
	_ = r.Do(ctx, "update t set n = n + 1", deadlock)
	require.NoError(t, r.Do(ctx, "update t set n = n + 1", ok))
	require.False(t, breaker.Open(), "breaker open after two failures and a success")
	// A constraint violation means the database answered: not a failure.
	_ = r.Do(ctx, "update t set n = n + 1", func(context.Context) error { return serverError{2627} })
	// Three failed operations in a row open it.
	for i := 0; i < 3; i++ {
		_ = r.Do(ctx, "update t set n = n + 1", deadlock)
	}
	require.True(t, breaker.Open(), "breaker not open after 3 failures in a row")
	executions = 0
	err := r.Do(ctx, "update t set n = n + 1", ok)
	require.ErrorIs(t, err, core.ErrCircuitOpen, "open breaker")
	require.ErrorIs(t, err, serverError{1205}, "open breaker")
	require.Zero(t, executions, "executions under an open breaker")
	// After OpenFor one probe runs; its failure reopens the breaker.
	clock.Advance(10 * time.Second)
	_ = r.Do(ctx, "update t set n = n + 1", deadlock)
	require.Equal(t, 2, executions, "probe: executions")
	require.True(t, breaker.Open(), "probe: a failed probe reopens the breaker")
	require.ErrorIs(t, r.Do(ctx, "update t set n = n + 1", ok), core.ErrCircuitOpen, "reopened breaker let an operation through")
	// A successful probe closes it.
	clock.Advance(10 * time.Second)
	require.NoError(t, r.Do(ctx, "update t set n = n + 1", ok), "successful probe")
	require.False(t, breaker.Open(), "breaker open after a successful probe")
}

// newBreaker is core.NewBreaker for settings that must be valid.
func newBreaker(t testing.TB, s core.BreakerSettings, clock core.Clock) *core.Breaker {
	t.Helper()
	b, err := core.NewBreaker(s, clock)
	require.NoError(t, err, "NewBreaker(%+v)", s)
	return b
}

func TestBreakerOff(t *testing.T) {
	b, err := core.NewBreaker(core.BreakerSettings{}, nil)
	require.NoError(t, err)
	assert.Nil(t, b, "zero settings must give no breaker")
	assert.False(t, b.Open(), "a nil breaker is closed")
}

// Settings out of range are an error naming the value and the range, never
// "off" or the default in its place.
func TestNewBreakerRejectsSettingsOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		s    core.BreakerSettings
		want string
	}{
		{core.BreakerSettings{Failures: -1}, "failures=-1: expected 0 (off) or 1 to 1073741823"},
		{core.BreakerSettings{Failures: limits.MaxBreakerFailures + 1, OpenFor: time.Second}, "failures=1073741824: expected 0 (off) or 1 to 1073741823"},
		{core.BreakerSettings{Failures: 3, OpenFor: -time.Second}, "open=-1s: expected 0 (the default, 30s) or a time up to 24h0m0s"},
		{core.BreakerSettings{Failures: 3, OpenFor: limits.MaxBreakerOpenFor + 1}, "open=24h0m0.000000001s: expected 0 (the default, 30s) or a time up to 24h0m0s"},
		{core.BreakerSettings{OpenFor: time.Minute}, "open=1m0s with failures=0 (off): expected failures of at least 1"},
	} {
		b, err := core.NewBreaker(tc.s, nil)
		assert.ErrorContains(t, err, tc.want, "%+v", tc.s)
		assert.Nil(t, b, "%+v", tc.s)
		assert.Equal(t, err, tc.s.Validate(), "%+v: Validate and NewBreaker agree", tc.s)
	}
	// The bounds themselves are in range.
	for _, s := range []core.BreakerSettings{
		{Failures: 1}, {Failures: limits.MaxBreakerFailures, OpenFor: limits.MaxBreakerOpenFor}, {Failures: 1, OpenFor: time.Nanosecond},
	} {
		b, err := core.NewBreaker(s, nil)
		require.NoError(t, err, "%+v", s)
		assert.NotNil(t, b, "%+v", s)
	}
}

func TestBreakerSuccessAllocatesNothing(t *testing.T) {
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:1,0}")}, core.Options{Breaker: newBreaker(t, core.BreakerSettings{Failures: 5}, nil)})
	ctx := context.Background()
	a := testing.AllocsPerRun(1000, func() { _ = r.Do(ctx, "update t set n = n + 1", func(context.Context) error { return nil }) })
	assert.Zero(t, a, "allocations of a success under a breaker")
}

// openBreaker returns a retrier whose breaker (2 failures, open 10 s) has
// just opened, and its clock.
func openBreaker(t *testing.T) (*core.Retrier, *core.Breaker, *coretest.Clock) {
	t.Helper()
	clock := coretest.NewClock(time.Time{})
	breaker := newBreaker(t, core.BreakerSettings{Failures: 2, OpenFor: 10 * time.Second}, clock)
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:1,0}")}, core.Options{Clock: clock, Breaker: breaker})
	for i := 0; i < 2; i++ {
		_ = r.Do(context.Background(), "update t set n = 1", func(context.Context) error { return serverError{1205} })
	}
	require.True(t, breaker.Open())
	return r, breaker, clock
}

// A probe that panics counts as a failure: the breaker reopens instead of
// staying half-open for ever, and the next probe can close it.
func TestBreakerPanicInProbeReopens(t *testing.T) {
	for name, observer := range map[string]bool{"closure": false, "observer": true} {
		t.Run(name, func(t *testing.T) {
			clock := coretest.NewClock(time.Time{})
			breaker := newBreaker(t, core.BreakerSettings{Failures: 2, OpenFor: 10 * time.Second}, clock)
			var obs core.Observer
			panicking := false
			if observer {
				obs = panicOnRetry{on: &panicking}
			}
			r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:1,0}")}, core.Options{Clock: clock, Breaker: breaker, Observer: obs})
			ctx := context.Background()
			for i := 0; i < 2; i++ {
				_ = r.Do(ctx, "update t set n = 1", func(context.Context) error { return serverError{1205} })
			}
			require.True(t, breaker.Open())
			clock.Advance(10 * time.Second)
			panicking = true
			assert.Panics(t, func() {
				_ = r.Do(ctx, "update t set n = 1", func(context.Context) error {
					if !observer {
						panic("boom")
					}
					return serverError{1205} // the observer panics when the retry is scheduled
				})
			})
			panicking = false
			assert.True(t, breaker.Open(), "a panicking probe is a failure")
			err := r.Do(ctx, "update t set n = 1", func(context.Context) error { return nil })
			assert.ErrorIs(t, err, core.ErrCircuitOpen, "reopened for OpenFor")
			clock.Advance(10 * time.Second)
			require.NoError(t, r.Do(ctx, "update t set n = 1", func(context.Context) error { return nil }))
			assert.False(t, breaker.Open(), "the next probe closes it")
		})
	}
}

type panicOnRetry struct {
	core.NopObserver
	on *bool
}

func (p panicOnRetry) RetryScheduled(core.RetryScheduled) {
	if *p.on {
		panic("observer")
	}
}

// A probe whose context was already cancelled does not close the breaker
// (the database did not answer), and does not keep it half-open: the next
// operation is the probe.
func TestBreakerCancelledProbeDecidesNothing(t *testing.T) {
	r, breaker, clock := openBreaker(t)
	clock.Advance(10 * time.Second)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	err := r.Do(cancelled, "update t set n = 1", func(ctx context.Context) error { return ctx.Err() })
	require.ErrorIs(t, err, context.Canceled)
	assert.True(t, breaker.Open(), "a cancelled probe closed the breaker")
	ran := false
	require.NoError(t, r.Do(context.Background(), "update t set n = 1", func(context.Context) error { ran = true; return nil }))
	assert.True(t, ran, "the next operation must be the probe, at once")
	assert.False(t, breaker.Open())
}

// An outcome reported under an earlier state moves nothing: an operation
// let through while the breaker was closed, which succeeds after the
// breaker opened, does not close it.
func TestBreakerStaleOutcomeIgnored(t *testing.T) {
	clock := coretest.NewClock(time.Time{})
	breaker := newBreaker(t, core.BreakerSettings{Failures: 2, OpenFor: 10 * time.Second}, clock)
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:1,0}")}, core.Options{Clock: clock, Breaker: breaker})
	ctx := context.Background()
	err := r.Do(ctx, "select 1", func(context.Context) error {
		for i := 0; i < 2; i++ { // meanwhile, other operations open the breaker
			_ = r.Do(ctx, "update t set n = 1", func(context.Context) error { return serverError{1205} })
		}
		require.True(t, breaker.Open())
		return nil
	})
	require.NoError(t, err)
	assert.True(t, breaker.Open(), "a success from before the breaker opened closed it")
}

// A probe that never reports (a GORM chain that panicked after Admit) is
// replaced by another after OpenFor: the breaker is never wedged.
func TestBreakerLostProbeReplaced(t *testing.T) {
	r, breaker, clock := openBreaker(t)
	clock.Advance(10 * time.Second)
	require.NoError(t, r.Admit(context.Background(), &core.Op{Kind: core.KindTransaction})) // the probe, never reported
	err := r.Admit(context.Background(), &core.Op{Kind: core.KindTransaction})
	require.ErrorIs(t, err, core.ErrCircuitOpen, "one probe at a time")
	clock.Advance(10 * time.Second)
	require.NoError(t, r.Do(context.Background(), "select 1", func(context.Context) error { return nil }))
	assert.False(t, breaker.Open())
}

// The refusal says that nothing ran and that the error it carries is the
// one that opened the breaker, not this operation's.
func TestBreakerRefusalNamesTheEarlierError(t *testing.T) {
	r, _, _ := openBreaker(t)
	ran := false
	err := r.Do(context.Background(), "select 1", func(context.Context) error { ran = true; return nil })
	require.ErrorIs(t, err, core.ErrCircuitOpen)
	assert.ErrorIs(t, err, serverError{1205})
	assert.False(t, ran)
	assert.Contains(t, err.Error(), "nothing ran; the error that opened it: mssql: error 1205")
}

// State, Opens and Probes follow the breaker through its states, as a
// metrics hook reads them: the probe sees half_open while it runs; a
// failed probe is another opening, a cancelled one is a probe and no
// opening; a nil breaker (off) is closed and counts nothing.
func TestBreakerStateOpensProbes(t *testing.T) {
	var off *core.Breaker
	assert.Equal(t, "closed", off.State())
	assert.Zero(t, off.Opens()+off.Probes())
	assert.Equal(t, []string{"closed", "open", "half_open"}, off.States())

	clock := coretest.NewClock(time.Time{})
	breaker := newBreaker(t, core.BreakerSettings{Failures: 2, OpenFor: 10 * time.Second}, clock)
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:1,0}")}, core.Options{Clock: clock, Breaker: breaker})
	ctx := context.Background()
	deadlock := func(context.Context) error { return serverError{1205} }
	counts := func() [2]uint64 { return [2]uint64{breaker.Opens(), breaker.Probes()} }
	assert.Equal(t, "closed", breaker.State())
	for range 2 {
		_ = r.Do(ctx, "update t set n = 1", deadlock)
	}
	assert.Equal(t, "open", breaker.State())
	assert.Equal(t, [2]uint64{1, 0}, counts(), "opened once, no probe yet")

	clock.Advance(10 * time.Second)
	seen := ""
	_ = r.Do(ctx, "update t set n = 1", func(context.Context) error { seen = breaker.State(); return serverError{1205} })
	assert.Equal(t, "half_open", seen, "the state while the probe runs")
	assert.Equal(t, "open", breaker.State(), "a failed probe reopens it")
	assert.Equal(t, [2]uint64{2, 1}, counts())

	clock.Advance(10 * time.Second)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_ = r.Do(cancelled, "update t set n = 1", func(ctx context.Context) error { return ctx.Err() })
	assert.Equal(t, "open", breaker.State())
	assert.Equal(t, [2]uint64{2, 2}, counts(), "a cancelled probe is a probe, not an opening")

	require.NoError(t, r.Do(ctx, "update t set n = 1", func(context.Context) error { return nil }))
	assert.Equal(t, "closed", breaker.State(), "a successful probe closes it")
	assert.Equal(t, [2]uint64{2, 3}, counts())
	require.NoError(t, r.Do(ctx, "update t set n = 1", func(context.Context) error { return nil }))
	assert.Equal(t, [2]uint64{2, 3}, counts(), "a success of a closed breaker counts nothing")
}
