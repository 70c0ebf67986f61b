// Package coretest holds test helpers for code built on core: a virtual
// clock that makes timing semantics exact and fast, and a recording
// Observer. It imports core alone. The conformance suite that every
// adapter runs, against the mssqltest server and real databases, is the
// package github.com/crl-go/crl/conformance.
package coretest

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/crl-go/crl/core"
)

// Clock is a virtual core.Clock: Sleep returns at once and moves the
// virtual time forward by the wait, and records it. Safe for concurrent use.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
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

// Sleep records d and advances the virtual time by it, unless ctx is
// already done, in which case it returns ctx.Err() and records nothing.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	if d > 0 {
		c.now = c.now.Add(d)
	}
	return nil
}

// Advance moves the virtual time forward by d, as if an attempt took d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
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
