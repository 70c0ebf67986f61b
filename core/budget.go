package core

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"
)

// BudgetSettings configures a retry budget. The zero value is the default
// budget: 100 retries at most, 0.1 retry earned per attempt that did not
// fail with a retryable error, at least 1 retry refilled per second, and a
// retry after a timeout costs 2.
type BudgetSettings struct {
	// Max is the capacity in retries; the bucket starts full. Zero means 100.
	Max float64
	// EarnPerAttempt is earned by each attempt that did not fail with a
	// retryable error. Zero means 0.1; a negative value earns nothing.
	EarnPerAttempt float64
	// RefillPerSecond is earned per second whatever happens. Zero means 1;
	// a negative value refills nothing.
	RefillPerSecond float64
	// TimeoutCost is what a retry after a timeout costs (other retries cost
	// 1). Zero means 2.
	TimeoutCost float64
}

func (s BudgetSettings) normalised() BudgetSettings {
	if s.Max <= 0 {
		s.Max = 100
	}
	s.EarnPerAttempt = defaultRate(s.EarnPerAttempt, 0.1)
	s.RefillPerSecond = defaultRate(s.RefillPerSecond, 1)
	if s.TimeoutCost <= 0 {
		s.TimeoutCost = 2
	}
	return s
}

func defaultRate(v, def float64) float64 {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// Validate reports settings that make no sense (NaN or infinite values).
func (s BudgetSettings) Validate() error {
	for name, v := range map[string]float64{"max": s.Max, "earn": s.EarnPerAttempt, "refill": s.RefillPerSecond, "timeoutCost": s.TimeoutCost} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("core: retry budget %s=%v: expected a finite number", name, v)
		}
	}
	return nil
}

// milli is the budget's fixed-point unit: 1 retry = 1000.
const milli = 1000

// Budget is a lock-free token bucket of retries, one per DB. It bounds a
// retry storm (every statement failing) to about 1 + EarnPerAttempt
// executions per request, while sporadic retries are never refused.
type Budget struct {
	max, earn, refill, timeoutCost int64 // in milli-retries
	clock                          Clock
	tokens                         atomic.Int64
	lastRefill                     atomic.Int64 // unix nanoseconds
}

// NewBudget returns a full budget. A nil clock means SystemClock.
func NewBudget(s BudgetSettings, clock Clock) *Budget {
	s = s.normalised()
	if clock == nil {
		clock = SystemClock{}
	}
	b := &Budget{
		max:         int64(s.Max * milli),
		earn:        int64(s.EarnPerAttempt * milli),
		refill:      int64(s.RefillPerSecond * milli),
		timeoutCost: int64(s.TimeoutCost * milli),
		clock:       clock,
	}
	b.tokens.Store(b.max)
	b.lastRefill.Store(clock.Now().UnixNano())
	return b
}

// Available returns the retries the budget holds now.
func (b *Budget) Available() float64 {
	b.refillNow()
	return float64(b.tokens.Load()) / milli
}

// Earn credits an attempt that did not fail with a retryable error. When
// the bucket is full it is a single atomic load.
func (b *Budget) Earn() {
	if b == nil || b.earn == 0 {
		return
	}
	b.add(b.earn)
}

func (b *Budget) add(n int64) {
	for {
		cur := b.tokens.Load()
		if cur >= b.max {
			return
		}
		next := min(cur+n, b.max)
		if b.tokens.CompareAndSwap(cur, next) {
			return
		}
	}
}

// Withdraw takes one retry (TimeoutCost after a timeout); it reports false,
// and takes nothing, when the budget cannot pay.
func (b *Budget) Withdraw(afterTimeout bool) bool {
	if b == nil {
		return true
	}
	b.refillNow()
	cost := int64(milli)
	if afterTimeout {
		cost = b.timeoutCost
	}
	for {
		cur := b.tokens.Load()
		if cur < cost {
			return false
		}
		if b.tokens.CompareAndSwap(cur, cur-cost) {
			return true
		}
	}
}

// refillNow credits RefillPerSecond for the time since the last refill.
func (b *Budget) refillNow() {
	if b.refill == 0 {
		return
	}
	now := b.clock.Now().UnixNano()
	last := b.lastRefill.Load()
	elapsed := now - last
	if elapsed <= 0 {
		return
	}
	if elapsed > int64(time.Hour) { // long idle: refill whole, avoid overflow
		if b.lastRefill.CompareAndSwap(last, now) {
			b.add(b.max)
		}
		return
	}
	// Credit whole milli-retries only, and move lastRefill by the time they
	// account for, so no fraction is lost between calls.
	earned := elapsed * b.refill / int64(time.Second)
	if earned == 0 {
		return
	}
	used := earned * int64(time.Second) / b.refill
	if b.lastRefill.CompareAndSwap(last, last+used) {
		b.add(earned)
	}
}
