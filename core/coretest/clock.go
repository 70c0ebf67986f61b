// Package coretest holds test helpers for code built on core: a virtual
// clock that makes timing semantics exact and fast, and a recording
// Observer. It imports core alone, and testify for the checks of its
// benchmark. The conformance suite that every adapter runs, against the
// mssqltest server and real databases, is the package
// github.com/crl-go/crl/conformance.
package coretest

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/crl-go/crl/core"
)

// Clock is a virtual core.Clock: Sleep returns at once and moves the
// virtual time forward by the wait, and records it. It has timers of its
// own (AfterFunc, which core finds by its signature): the functions given
// to AfterFunc run when Sleep or Advance moves the time to theirs (nothing else moves it), so the
// queryTimeout of rows read after the statement ends when the test moves
// the clock past it (or, as every attempt bound, after that much real
// time). Safe for concurrent use.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
	timers []*timer // pending, in the order they were arranged
}

var _ core.Clock = (*Clock)(nil)

// NewClock returns a virtual clock that starts at start (the zero time
// means the real time now, so context deadlines compare sensibly).
func NewClock(start time.Time) *Clock {
	if start.IsZero() {
		start = time.Now()
	}
	return &Clock{now: start}
}

// Now returns the virtual time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep records d and advances the virtual time by it, running the timers
// it reaches, unless ctx is already done, in which case it returns
// ctx.Err() and records nothing.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.advance(max(d, 0))
	return nil
}

// Advance moves the virtual time forward by d, as if an attempt took d,
// and runs the timers it reaches.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.advance(d)
}

// advance moves the time by d with c.mu held, releases it, and runs the
// functions of the timers now due, earliest first, on this goroutine.
func (c *Clock) advance(d time.Duration) {
	c.now = c.now.Add(d)
	var due []*timer
	c.timers = slices.DeleteFunc(c.timers, func(t *timer) bool {
		if t.at.After(c.now) {
			return false
		}
		due = append(due, t)
		return true
	})
	c.mu.Unlock()
	slices.SortStableFunc(due, func(a, b *timer) int { return a.at.Compare(b.at) })
	for _, t := range due {
		t.f()
	}
}

// AfterFunc arranges for f to run when Sleep or Advance moves the virtual
// time d past now (on the goroutine that moves it), or at once in its own
// goroutine when d ≤ 0.
func (c *Clock) AfterFunc(d time.Duration, f func()) interface{ Stop() bool } {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{clock: c, at: c.now.Add(d), f: f}
	if d <= 0 {
		go f()
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

// Timers returns how many AfterFunc calls are pending: arranged, and
// neither run nor stopped.
func (c *Clock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// timer is a pending AfterFunc call of a Clock.
type timer struct {
	clock *Clock
	at    time.Time
	f     func()
}

// Stop removes the call, and reports whether it was still pending.
func (t *timer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.timers, t)
	if i < 0 {
		return false
	}
	c.timers = slices.Delete(c.timers, i, i+1)
	return true
}

// Sleeps returns the waits recorded so far, in order.
func (c *Clock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// Reset forgets the recorded waits.
func (c *Clock) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = nil
}

// Seconds returns the durations of v seconds each, for comparing waits.
func Seconds(v ...float64) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, s := range v {
		out[i] = time.Duration(math.Round(s * float64(time.Second)))
	}
	return out
}
