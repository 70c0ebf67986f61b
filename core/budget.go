package core

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/crl-go/crl/internal/tables/family"
	"github.com/crl-go/crl/internal/tables/limits"
	"github.com/crl-go/crl/internal/text/sqlscan"
)

// The budget's defaults (docs/semantics.md, "The retry budget"); the
// ranges of its settings are internal/tables/limits'.
const (
	defaultBudgetMax                  = 20
	defaultBudgetEarn                 = 0.1
	defaultBudgetContentionCost       = 0.1
	defaultBudgetOverloadCost         = 2
	defaultBudgetContentionPerSuccess = 64
)

// BudgetSettings configures a retry budget. The zero value is the default
// budget: 20 tokens, 0.1 token earned per success, a transient failure
// costs 1 and an overload failure (time-outs, throttling, too many
// connections, lock-wait time-outs, resource errors) 2, and a retry of
// either runs only while at least half of Max is left after its failure
// has paid. Contention (deadlock victims, serialization failures) is paid
// from a pool of its own, 12.8 tokens at 0.1 a failure, that every
// success refills by 64 failures' worth: contention is retried while the
// database makes progress, however many attempts a hot row makes fail for
// each one that commits, and stops once nothing succeeds. Only successes
// earn. Nothing depends on time: the bound on a retry storm is the same at
// 0.5 request/s as at 10,000/s.
type BudgetSettings struct {
	// Max is the capacity in tokens, from 2 to 1,000,000, and at least
	// twice every cost (so that every class can be retried at all); the
	// budget starts full. Zero means 20. Half of it is what a storm of
	// transient or overload failures may spend before the budget stops
	// their retries; the contention pool holds two successes' worth
	// (2 × ContentionPerSuccess × ContentionCost), at least Max/2 and at
	// most Max.
	Max float64
	// EarnPerAttempt is what each success earns, from 0.001 to 1 (an
	// error, whether a rule retries it or not, earns nothing). Zero means
	// 0.1: about one transient retry per ten successes once the budget is
	// below full, so a storm runs at most about 1.1 executions per request.
	EarnPerAttempt float64
	// ContentionCost is what a deadlock victim or a serialization failure
	// costs the contention pool, from 0.001 to 1000. Zero means 0.1: the
	// default pool of 12.8 tokens pays for 128 failures in a row before a
	// success comes.
	ContentionCost float64
	// ContentionPerSuccess is how many contention failures each success
	// pays for, from 1 to 10,000: a hot row that ContentionPerSuccess+1
	// writers on one handle fight over, each round failing all of them
	// but one, is retried in full. Zero means 64.
	ContentionPerSuccess float64
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
	if s.ContentionPerSuccess == 0 {
		s.ContentionPerSuccess = defaultBudgetContentionPerSuccess
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
	}{{"max", n.Max}, {"earn", n.EarnPerAttempt}, {"contentionCost", n.ContentionCost},
		{"contentionPerSuccess", n.ContentionPerSuccess}, {"overloadCost", n.OverloadCost}} {
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

// budgetUnit is the budget's fixed-point unit: 1 token = 1,000, the
// finest step of any setting. Both buckets fit one 64-bit word at that
// unit (at most Max, 10⁹ units, each), so that the success path reads
// one word.
const budgetUnit = 1_000

// Budget is a retry budget, one per database handle: lock-free buckets
// of tokens in the manner of gRPC's retry throttling. A transient or
// overload failure costs tokens by its class (see BudgetSettings), every
// success earns a fraction of one, and such a retry runs only while at
// least half the capacity is left. Contention is paid from a pool of its
// own that successes refill by many failures' worth (ContentionPerSuccess):
// a contention retry runs while the pool can pay for it, so a deadlock
// victim or a serialization failure is retried for as long as the
// database makes progress, on a hot row where most attempts fail
// included. In a storm, where nothing succeeds, retries stop once an
// allowance is spent (Max/2 tokens' worth of transient or overload
// failures, the contention pool's of contention) and then cost nothing
// more, whatever the request rate; an error that no rule retries earns
// nothing, so it cannot pay for another statement's retries; after a
// storm, retries return as successes refill the buckets, not after a
// fixed time.
type Budget struct {
	max, half, gain int64                 // in budgetUnit
	cost            [classCount]int64     // in budgetUnit, by class
	pool            int64                 // the contention pool's capacity, in budgetUnit
	progress        int64                 // what a success adds to the contention pool, in budgetUnit
	full            uint64                // state when both buckets are full
	overrides       map[token]budgetClass // BudgetSettings' lists; nil when none
	// state holds the bucket of transient and overload failures in its
	// upper 32 bits and the contention pool in its lower 32, in budgetUnit.
	state atomic.Uint64
}

// pack and unpack convert between the buckets and Budget.state.
func pack(tokens, contention int64) uint64 { return uint64(tokens)<<32 | uint64(contention) }

func unpack(s uint64) (tokens, contention int64) { return int64(s >> 32), int64(s & (1<<32 - 1)) }

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
	b.progress = units(s.ContentionPerSuccess * s.ContentionCost)
	// Two successes' worth: on a hot row of ContentionPerSuccess+1
	// writers, a round's failures may all come before its commit and
	// the previous round's all after that one's.
	b.pool = max(b.max-b.half, min(2*b.progress, b.max))
	b.full = pack(b.max, b.pool)
	b.state.Store(b.full)
	return b, nil
}

// Available returns the tokens the budget holds now for transient and
// overload failures (up to Max).
func (b *Budget) Available() float64 {
	tokens, _ := unpack(b.state.Load())
	return float64(tokens) / budgetUnit
}

// Classes returns the names of the budget's classes, as the retryBudget
// setting and Tokens name them: transient, contention, overload (a new
// slice each call).
func (b *Budget) Classes() []string { return append([]string(nil), classNames[:]...) }

// Tokens returns what the retries of class's failures may spend now
// before the budget refuses them, and the most they may spend once it is
// full, in tokens. Contention spends its own pool (12.8 tokens by
// default); transient and overload failures share the bucket above half
// of Max (10 by default), so the two read the same. A retry is refused
// when available is below its class's cost. One atomic load, no lock: a
// metrics hook reads it on collection. An unknown class or a nil budget
// (off) is 0, 0.
func (b *Budget) Tokens(class string) (available, capacity float64) {
	if b == nil {
		return 0, 0
	}
	tokens, contention := unpack(b.state.Load())
	switch class {
	case classNames[classContention]:
		return float64(contention) / budgetUnit, float64(b.pool) / budgetUnit
	case classNames[classTransient], classNames[classOverload]:
		return float64(max(tokens-b.half, 0)) / budgetUnit, float64(b.max-b.half) / budgetUnit
	}
	return 0, 0
}

// earn credits a success. When both buckets are full (the usual case) it
// is a single atomic load: no shared write on the success path, and small
// enough to inline.
func (b *Budget) earn() {
	if b != nil && b.state.Load() != b.full {
		b.refill()
	}
}

// isFull reports whether both buckets are full (earn would do nothing);
// true for no budget.
func (b *Budget) isFull() bool { return b == nil || b.state.Load() == b.full }

// refill adds gain tokens to the bucket, up to max, and progress to the
// contention pool, up to its capacity. It stays out of line so that earn,
// which every success calls, inlines.
//
//go:noinline
func (b *Budget) refill() {
	for {
		cur := b.state.Load()
		if cur == b.full {
			return
		}
		tokens, contention := unpack(cur)
		if b.state.CompareAndSwap(cur, pack(min(tokens+b.gain, b.max), min(contention+b.progress, b.pool))) {
			return
		}
	}
}

// withdraw charges the retryable failure d decided on, which asks for a
// retry, and reports whether the retry may run: for contention, the pool
// could pay for it; for any other class, at least half the capacity is
// left after the charge. The charge is taken either way, as in gRPC's
// retry throttling: failures are the signal.
func (b *Budget) withdraw(d *decision) bool {
	if b == nil {
		return true
	}
	return b.charge(&d.facts)
}

// settle tells the budget how a loop that gives up ended: a retryable
// failure that is not retried (its rule's retries are used up) costs,
// like withdraw without asking. Nothing else is charged or earned: an
// error that no rule retries is not a success.
func (b *Budget) settle(d *decision) {
	if b != nil && d.charge == chargeFail {
		b.charge(&d.facts)
	}
}

// classOf is the class of a failure: the settings' lists first (its
// number or SQLSTATE, its class by meaning, then the named conditions it
// meets), then the builtin table.
func (b *Budget) classOf(c *errorFacts) budgetClass {
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
		if m := c.meaning(); m != 0 {
			if k, ok := b.overrides[m]; ok {
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
// its capacity (for contention, the contention pool's) over the cost of
// the error's class, for a handle of the database/sql driver driverName
// (the class table is per family; an unknown driver or a nil budget makes
// every error transient, and a nil budget, which is off, allows every
// retry: -1; a token that rules cannot write allows none: 0). It is what
// crl check and crl explain tell of a rule that asks for more retries.
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
		k = tableClass(family.Of(driverName), t)
	}
	if k == classContention {
		return int(b.pool / b.cost[k])
	}
	return int((b.max - b.half) / b.cost[k])
}

// charge takes the cost of a failure from its bucket, down to zero, and
// reports whether a retry of it may run: for contention, the pool could
// pay for it; for the other classes, at least half of max is left.
func (b *Budget) charge(c *errorFacts) bool {
	k := b.classOf(c)
	cost := b.cost[k]
	for {
		cur := b.state.Load()
		tokens, contention := unpack(cur)
		var ok bool
		if k == classContention {
			ok = contention >= cost
			contention = max(contention-cost, 0)
		} else {
			ok = tokens-cost >= b.half
			tokens = max(tokens-cost, 0)
		}
		if b.state.CompareAndSwap(cur, pack(tokens, contention)) {
			return ok
		}
	}
}
