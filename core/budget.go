package core

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
)

// The budget's defaults and the ranges of its settings (docs/semantics.md,
// "The retry budget").
const (
	defaultBudgetMax         = 20
	defaultBudgetEarn        = 0.1
	defaultBudgetTimeoutCost = 2

	budgetMaxLow, budgetMaxHigh                 = 2, 1_000_000
	budgetEarnLow, budgetEarnHigh               = 0.001, 1
	budgetTimeoutCostLow, budgetTimeoutCostHigh = 1, 1000
)

// BudgetSettings configures a retry budget. The zero value is the default
// budget: 20 tokens, 0.1 token earned per attempt that did not fail with a
// retryable error, and a failure after a timeout costs 2 tokens (any other
// retryable failure costs 1). A retry runs only while at least half of Max
// is left after its failure has paid. Nothing depends on time: the bound
// on a retry storm is the same at 0.5 request/s as at 10,000/s.
type BudgetSettings struct {
	// Max is the capacity in tokens, from 2 to 1,000,000; the budget starts
	// full. Zero means 20. It is also what a storm may spend before the
	// budget stops retries: half of it.
	Max float64
	// EarnPerAttempt is what each attempt earns that did not fail with a
	// retryable error, from 0.001 to 1. Zero means 0.1: about one retry per
	// ten successes once the budget is below full, so a storm runs at most
	// about 1.1 executions per request.
	EarnPerAttempt float64
	// TimeoutCost is what a failure after a timeout costs, from 1 to 1000
	// and at most Max/2 (so that a timeout can be retried at all); any
	// other retryable failure costs 1. Zero means 2.
	TimeoutCost float64
}

func (s BudgetSettings) normalised() BudgetSettings {
	if s.Max == 0 {
		s.Max = defaultBudgetMax
	}
	if s.EarnPerAttempt == 0 {
		s.EarnPerAttempt = defaultBudgetEarn
	}
	if s.TimeoutCost == 0 {
		s.TimeoutCost = defaultBudgetTimeoutCost
	}
	return s
}

// Validate reports the first setting out of its range, naming it by its
// configuration key and the range: "core: retry budget max=1e+09: expected
// a number from 2 to 1000000". Zero fields are the defaults.
func (s BudgetSettings) Validate() error {
	n := s.normalised()
	for _, f := range []struct {
		name string
		v    float64
	}{{"max", n.Max}, {"earn", n.EarnPerAttempt}, {"timeoutCost", n.TimeoutCost}} {
		if err := CheckBudgetSetting(f.name, f.v); err != nil {
			return fmt.Errorf("core: retry budget %s=%s: %w", f.name, formatNumber(f.v), err)
		}
	}
	if n.TimeoutCost*2 > n.Max {
		return fmt.Errorf("core: retry budget max=%s with timeoutCost=%s: expected max of at least 2 × timeoutCost (%s), so that a timeout can be retried",
			formatNumber(n.Max), formatNumber(n.TimeoutCost), formatNumber(n.TimeoutCost*2))
	}
	return nil
}

// CheckBudgetSetting reports a value out of the range of the budget
// setting name (max, earn or timeoutCost, case-insensitive) with an error
// that says what is expected ("expected a number from 2 to 1000000"), so
// that configuration readers name the value as it was written.
func CheckBudgetSetting(name string, v float64) error {
	var low, high float64
	switch strings.ToLower(name) {
	case "max":
		low, high = budgetMaxLow, budgetMaxHigh
	case "earn":
		low, high = budgetEarnLow, budgetEarnHigh
	case "timeoutcost":
		low, high = budgetTimeoutCostLow, budgetTimeoutCostHigh
	default:
		return fmt.Errorf("expected a budget setting: max, earn or timeoutCost, not %q", name)
	}
	if math.IsNaN(v) || v < low || v > high {
		return fmt.Errorf("expected a number from %s to %s", strconv.FormatFloat(low, 'f', -1, 64), strconv.FormatFloat(high, 'f', -1, 64))
	}
	return nil
}

func formatNumber(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// budgetUnit is the budget's fixed-point unit: 1 token = 1,000,000.
const budgetUnit = 1_000_000

// Budget is a retry budget, one per database handle: a lock-free bucket of
// tokens in the manner of gRPC's retry throttling. Every retryable failure
// costs tokens, every other attempt earns a fraction of one, and a retry runs only while at least half the capacity is
// left. In a storm, where every attempt fails, retries stop after about
// Max/2 failures and then cost nothing more, whatever the request rate;
// sporadic failures (up to EarnPerAttempt/(1+EarnPerAttempt) ≈ 9% of
// attempts) leave the bucket full, so each is retried; after a storm,
// retries return as successes refill the bucket (Max/2 ÷ EarnPerAttempt
// successes, 100 by default), not after a fixed time.
type Budget struct {
	max, half, gain, timeoutCost int64 // in budgetUnit
	tokens                       atomic.Int64
}

// NewBudget returns a full budget, or the error of s.Validate.
func NewBudget(s BudgetSettings) (*Budget, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	s = s.normalised()
	b := &Budget{
		max:         int64(math.Round(s.Max * budgetUnit)),
		gain:        int64(math.Round(s.EarnPerAttempt * budgetUnit)),
		timeoutCost: int64(math.Round(s.TimeoutCost * budgetUnit)),
	}
	b.half = b.max / 2
	b.tokens.Store(b.max)
	return b, nil
}

// Available returns the tokens the budget holds now.
func (b *Budget) Available() float64 {
	return float64(b.tokens.Load()) / budgetUnit
}

// earn credits an attempt that did not fail with a retryable error. When
// the bucket is full (the usual case) it is a single atomic load: no shared
// write on the success path, and small enough to inline.
func (b *Budget) earn() {
	if b != nil && b.tokens.Load() < b.max {
		b.refill()
	}
}

// refill adds gain tokens, up to max.
func (b *Budget) refill() {
	for {
		cur := b.tokens.Load()
		if cur >= b.max {
			return
		}
		if b.tokens.CompareAndSwap(cur, min(cur+b.gain, b.max)) {
			return
		}
	}
}

// withdraw charges a retryable failure that asks for a retry (TimeoutCost
// after a timeout, otherwise 1) and reports whether the retry may run: at
// least half the capacity is left after the charge. The charge is taken
// either way, as in gRPC's retry throttling: failures are the signal.
func (b *Budget) withdraw(afterTimeout bool) bool {
	if b == nil {
		return true
	}
	return b.charge(afterTimeout) >= b.half
}

// settle tells the budget how a loop that gives up ended: an attempt that
// did not fail with a retryable error earns, a retryable failure that is
// not retried (its rule's retries are used up) costs, like withdraw
// without asking.
func (b *Budget) settle(d Decision) {
	if b == nil {
		return
	}
	switch d.charge {
	case chargeEarn:
		b.earn()
	case chargeFail:
		b.charge(d.timeout)
	}
}

// charge takes the cost of a failure, down to zero, and returns what is left.
func (b *Budget) charge(afterTimeout bool) int64 {
	cost := int64(budgetUnit)
	if afterTimeout {
		cost = b.timeoutCost
	}
	for {
		cur := b.tokens.Load()
		next := max(cur-cost, 0)
		if b.tokens.CompareAndSwap(cur, next) {
			return next
		}
	}
}
