package core

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/crl-go/crl/internal/family"
	"github.com/crl-go/crl/internal/limits"
	"github.com/crl-go/crl/internal/sqlscan"
)

// The budget's defaults (docs/semantics.md, "The retry budget"); the
// ranges of its settings are internal/limits'.
const (
	defaultBudgetMax            = 20
	defaultBudgetEarn           = 0.1
	defaultBudgetContentionCost = 0.1
	defaultBudgetOverloadCost   = 2
)

// BudgetSettings configures a retry budget. The zero value is the default
// budget: 20 tokens, 0.1 token earned per attempt that did not fail with a
// retryable error, and a retryable failure costs by its class: 0.1 for
// contention (deadlock victims, serialization failures), 2 for overload
// (time-outs, throttling, too many connections, lock-wait time-outs,
// resource errors), 1 for anything else. A retry runs only while at least
// half of Max is left after its failure has paid. Nothing depends on time:
// the bound on a retry storm is the same at 0.5 request/s as at 10,000/s.
type BudgetSettings struct {
	// Max is the capacity in tokens, from 2 to 1,000,000, and at least
	// twice every cost (so that every class can be retried at all); the
	// budget starts full. Zero means 20. Half of it is what a storm may
	// spend before the budget stops retries.
	Max float64
	// EarnPerAttempt is what each attempt earns that did not fail with a
	// retryable error, from 0.001 to 1. Zero means 0.1: about one
	// transient retry per ten successes once the budget is below full, so
	// a storm runs at most about 1.1 executions per request.
	EarnPerAttempt float64
	// ContentionCost is what a deadlock victim or a serialization failure
	// costs, from 0.001 to 1000. Zero means 0.1: contention is retried
	// while up to half of all attempts fail, and the budget absorbs
	// bursts of 100 victims in a row.
	ContentionCost float64
	// OverloadCost is what a time-out, throttling, "too many connections",
	// a lock-wait time-out or a resource error costs, from 0.001 to 1000.
	// Zero means 2.
	OverloadCost float64
	// Contention, Overload and Transient move errors between the classes:
	// each is a list of error tokens as rules write them (1205, 40P01,
	// timeout, badconn), separated by '|' or white space, which then
	// belong to that class whatever the builtin table says. Empty means
	// the builtin table. A token may be in one list only.
	Contention, Overload, Transient string
}

func (s BudgetSettings) normalised() BudgetSettings {
	if s.Max == 0 {
		s.Max = defaultBudgetMax
	}
	if s.EarnPerAttempt == 0 {
		s.EarnPerAttempt = defaultBudgetEarn
	}
	if s.ContentionCost == 0 {
		s.ContentionCost = defaultBudgetContentionCost
	}
	if s.OverloadCost == 0 {
		s.OverloadCost = defaultBudgetOverloadCost
	}
	return s
}

// Validate reports the first setting out of its range, naming it by its
// configuration key and the range: "core: retry budget max=1e+09: expected
// a number from 2 to 1000000". Zero fields are the defaults.
func (s BudgetSettings) Validate() error {
	_, err := s.compile()
	return err
}

// compile validates s and returns its class overrides (nil when none).
func (s BudgetSettings) compile() (map[token]budgetClass, error) {
	n := s.normalised()
	for _, f := range []struct {
		name string
		v    float64
	}{{"max", n.Max}, {"earn", n.EarnPerAttempt}, {"contentionCost", n.ContentionCost}, {"overloadCost", n.OverloadCost}} {
		if err := limits.BudgetSetting(f.name, f.v); err != nil {
			return nil, fmt.Errorf("core: retry budget %s=%s: %w", f.name, formatNumber(f.v), err)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"contentionCost", n.ContentionCost}, {"overloadCost", n.OverloadCost}} {
		if f.v*2 > n.Max {
			return nil, fmt.Errorf("core: retry budget max=%s with %s=%s: expected max of at least 2 × %s (%s), so that such a failure can be retried",
				formatNumber(n.Max), f.name, formatNumber(f.v), f.name, formatNumber(f.v*2))
		}
	}
	var overrides map[token]budgetClass
	for _, l := range []struct {
		class budgetClass
		list  string
	}{{classContention, s.Contention}, {classOverload, s.Overload}, {classTransient, s.Transient}} {
		for _, word := range strings.FieldsFunc(l.list, func(r rune) bool { return r == '|' || r < 0x80 && isSpace(byte(r)) }) {
			t, err := parseToken(word)
			if err != nil {
				return nil, fmt.Errorf("core: retry budget %s=%q: %w", classNames[l.class], l.list, err)
			}
			if k, ok := overrides[t]; ok {
				return nil, fmt.Errorf("core: retry budget: %s is in both %s= and %s=, expected one class for each error",
					t, classNames[k], classNames[l.class])
			}
			if overrides == nil {
				overrides = map[token]budgetClass{}
			}
			overrides[t] = l.class
		}
	}
	return overrides, nil
}

func formatNumber(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// budgetUnit is the budget's fixed-point unit: 1 token = 1,000,000.
const budgetUnit = 1_000_000

// Budget is a retry budget, one per database handle: a lock-free bucket of
// tokens in the manner of gRPC's retry throttling. Every retryable failure
// costs tokens by its class (contention, overload or transient, see
// BudgetSettings), every other attempt earns a fraction of one, and a
// retry runs only while at least half the capacity is left. In a storm,
// where every attempt fails, retries stop after Max/2 tokens' worth of
// failures and then cost nothing more, whatever the request rate and
// whatever the class; contention (deadlock victims at up to half of all
// attempts) leaves the bucket full, so each victim is retried; sporadic
// transient failures (up to EarnPerAttempt/(1+EarnPerAttempt) ≈ 9% of
// attempts) are retried too; after a storm, retries return as successes
// refill the bucket, not after a fixed time.
type Budget struct {
	max, half, gain int64                 // in budgetUnit
	cost            [classCount]int64     // in budgetUnit, by class
	overrides       map[token]budgetClass // BudgetSettings' lists; nil when none
	tokens          atomic.Int64
}

// NewBudget returns a full budget, or the error of s.Validate.
func NewBudget(s BudgetSettings) (*Budget, error) {
	overrides, err := s.compile()
	if err != nil {
		return nil, err
	}
	s = s.normalised()
	units := func(v float64) int64 { return int64(math.Round(v * budgetUnit)) }
	b := &Budget{max: units(s.Max), gain: units(s.EarnPerAttempt), overrides: overrides}
	b.cost[classTransient] = budgetUnit
	b.cost[classContention] = units(s.ContentionCost)
	b.cost[classOverload] = units(s.OverloadCost)
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

// withdraw charges the retryable failure d decided on, which asks for a
// retry, and reports whether the retry may run: at least half the
// capacity is left after the charge. The charge is taken either way, as in
// gRPC's retry throttling: failures are the signal.
func (b *Budget) withdraw(d *Decision) bool {
	if b == nil {
		return true
	}
	return b.charge(&d.blame) >= b.half
}

// settle tells the budget how a loop that gives up ended: an attempt that
// did not fail with a retryable error earns, a retryable failure that is
// not retried (its rule's retries are used up) costs, like withdraw
// without asking.
func (b *Budget) settle(d *Decision) {
	if b == nil {
		return
	}
	switch d.charge {
	case chargeEarn:
		b.earn()
	case chargeFail:
		b.charge(&d.blame)
	}
}

// classOf is the class of a failure: the settings' lists first (its
// number or SQLSTATE, then the named conditions it meets), then the
// builtin table.
func (b *Budget) classOf(c *class) budgetClass {
	if b.overrides != nil {
		if t, ok := c.errorToken(); ok {
			if k, ok := b.overrides[t]; ok {
				return k
			}
		}
		if c.state != 0 {
			if k, ok := b.overrides[c.state]; ok {
				return k
			}
		}
		if k, ok := b.overrides[tokenTimeout]; ok && c.timeout {
			return k
		}
		if k, ok := b.overrides[tokenBadConn]; ok && c.err != nil && c.badConn() {
			return k
		}
	}
	return c.builtinClass()
}

// Allowance returns how many retries of one operation whose attempts all
// fail with the error token tok (as rules write it: 1205, 40P01,
// timeout) the budget lets run when it is full, before it refuses: half
// its capacity over the cost of the error's class, for a handle of the
// database/sql driver driverName (the class table is per family; an
// unknown driver or a nil budget makes every error transient, and a nil
// budget, which is off, allows every retry: -1; a token that rules
// cannot write allows none: 0). It is what crl check
// and crl explain tell of a rule that asks for more retries.
func (b *Budget) Allowance(driverName, tok string) int {
	if b == nil {
		return -1
	}
	t, err := parseToken(sqlscan.TrimSpace(tok))
	if err != nil {
		return 0
	}
	k, ok := b.overrides[t]
	if !ok {
		c := class{family: family.Of(driverName)}
		switch {
		case t == tokenTimeout:
			c.timeout = true
		case t == tokenBadConn:
		case c.family == familyPostgres || t >= stateBase:
			c.state = t
		default:
			c.number, c.hasNumber = int32(t), true
		}
		k = c.builtinClass()
	}
	cost := b.cost[k]
	return int((b.max - b.half) / cost)
}

// charge takes the cost of a failure, down to zero, and returns what is left.
func (b *Budget) charge(c *class) int64 {
	cost := b.cost[b.classOf(c)]
	for {
		cur := b.tokens.Load()
		next := max(cur-cost, 0)
		if b.tokens.CompareAndSwap(cur, next) {
			return next
		}
	}
}
