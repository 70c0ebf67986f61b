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

// systemClock is the real clock: time.Now, and a timer raced against the
// context's Done channel (never time.Sleep, so a cancelled wait ends at once).
type systemClock struct{}

// Now returns time.Now().
func (systemClock) Now() time.Time { return time.Now() }

// Sleep waits d or until ctx is done.
func (systemClock) Sleep(ctx context.Context, d time.Duration) error {
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

// timerClock is a Clock whose time is not the real time, such as the
// virtual clock of core/coretest, that runs timers on its own time: it
// has an AfterFunc that calls f once the clock's time has moved d past
// Now(), unless the returned value's Stop is called first (Stop reports
// whether it prevented the call; f may run on the goroutine that moves the
// clock, so it must not block). A queryTimeout bounds an attempt on the
// real time (the attempt really runs that long); when the Retrier's clock
// is a timerClock, the queryTimeout of a statement whose rows are read
// after it returns (Op.Rows) also ends when the clock's time reaches it,
// so a test that moves a virtual clock past the queryTimeout sees the rows
// end exactly then. systemClock is not one: its time is the real time.
// The method's signature is written out (no named Timer type) so that a
// clock outside core needs nothing of core's to be one.
type timerClock interface {
	Clock
	AfterFunc(d time.Duration, f func()) interface{ Stop() bool }
}
