package core

import (
	"context"
	"time"
)

// Clock is the time source of the loops and the budget. Tests inject a
// clock that records the waits and returns at once, so timing semantics are
// exact and fast.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Sleep waits d, or until ctx is done; it returns ctx.Err() when the
	// context ended first and nil otherwise. A d ≤ 0 returns at once
	// (reporting a context that is already done).
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is the real clock: time.Now, and a timer raced against the
// context's Done channel (never time.Sleep, so a cancelled wait ends at once).
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Sleep waits d or until ctx is done.
func (SystemClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
