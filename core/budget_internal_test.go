package core

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/internal/tables/family"
)

// failure is the decision of a retryable failure err, as the loops build it.
func failure(err error, charge charge) *decision {
	return &decision{facts: factsOf(err, false), charge: charge}
}

type sqlServerErr int32

func (e sqlServerErr) Error() string         { return fmt.Sprintf("mssql: error %d", int32(e)) }
func (e sqlServerErr) SQLErrorNumber() int32 { return int32(e) }

type pgErr string

func (e pgErr) Error() string    { return "pg: " + string(e) }
func (e pgErr) SQLState() string { return string(e) }

// pool is what the contention pool holds.
func pool(b *Budget) float64 {
	available, _ := b.Tokens("contention")
	return available
}

// A transient failure costs 1, overload (a time-out included) 2, from a
// bucket where a retry runs while at least half of Max is left after its
// failure paid; contention costs 0.1 from a pool of its own (two
// successes' worth, 12.8, at least Max/2 and at most Max) where a retry
// runs while the pool can pay. The charge is taken even when the
// retry is refused; a success earns 0.1 in the bucket and 64 contention
// failures' worth in the pool, up to their capacities.
func TestBudgetAccounting(t *testing.T) {
	b, err := NewBudget(BudgetSettings{Max: 10})
	require.NoError(t, err)
	assert.Equal(t, 10.0, b.Available())
	assert.Equal(t, 10.0, pool(b), "12.8, at most Max")
	b.earn()
	assert.Equal(t, 10.0, b.Available(), "a full budget stays full")
	timeout := fmt.Errorf("read: %w", context.DeadlineExceeded)
	assert.True(t, b.withdraw(failure(timeout, chargeNone)))
	assert.Equal(t, 8.0, b.Available())
	assert.True(t, b.withdraw(failure(sqlServerErr(40613), chargeNone)))
	assert.True(t, b.withdraw(failure(sqlServerErr(40613), chargeNone)))
	assert.True(t, b.withdraw(failure(sqlServerErr(1205), chargeNone)))
	assert.Equal(t, 6.0, b.Available(), "a deadlock victim costs the bucket nothing")
	assert.InDelta(t, 9.9, pool(b), 1e-9, "it costs the contention pool 0.1")
	assert.True(t, b.withdraw(failure(sqlServerErr(40613), chargeNone)), "5 left is half")
	assert.False(t, b.withdraw(failure(sqlServerErr(40613), chargeNone)), "4 left is below half")
	assert.Equal(t, 4.0, b.Available())
	b.settle(failure(sqlServerErr(40501), chargeFail))
	assert.Equal(t, 2.0, b.Available(), "throttling is overload")
	b.settle(failure(timeout, chargeFail))
	b.settle(failure(sqlServerErr(4060), chargeFail))
	assert.Equal(t, 0.0, b.Available(), "never below zero")
	b.settle(failure(sqlServerErr(4060), chargeNone))
	assert.Equal(t, 0.0, b.Available(), "an error no rule retries earns nothing")
	for range 10 {
		b.earn()
	}
	assert.InDelta(t, 1.0, b.Available(), 1e-9, "ten successes earn one token")
	assert.Equal(t, 10.0, pool(b), "and refill the contention pool")

	for range 99 {
		require.True(t, b.withdraw(failure(pgErr("40001"), chargeNone)))
	}
	assert.InDelta(t, 0.1, pool(b), 1e-9)
	assert.True(t, b.withdraw(failure(pgErr("40P01"), chargeNone)), "the pool pays for its last failure")
	assert.False(t, b.withdraw(failure(pgErr("40P01"), chargeNone)), "an empty pool pays for none")
	assert.Equal(t, 0.0, pool(b))
	b.earn()
	assert.InDelta(t, 6.4, pool(b), 1e-9, "a success pays for 64 contention failures")
	b.earn()
	assert.Equal(t, 10.0, pool(b), "up to the pool's capacity")
	assert.InDelta(t, 1.2, b.Available(), 1e-9, "contention costs the bucket nothing")

	d, err := NewBudget(BudgetSettings{})
	require.NoError(t, err)
	assert.Equal(t, 20.0, d.Available(), "the default holds 20 tokens")
	assert.Equal(t, 12.8, pool(d), "and a contention pool of two successes' worth")

	var none *Budget // off: everything allowed
	assert.True(t, none.withdraw(failure(timeout, chargeNone)))
	none.earn()
	none.settle(failure(timeout, chargeFail))
}

// Tokens reads, per class, what its retries may spend before the budget
// refuses them: the contention pool for contention, the bucket above
// Max/2 for transient and overload (one bucket, one value); a retry is
// refused when that is below the class's cost. Classes names the
// classes, in a slice of the caller's own.
func TestBudgetTokens(t *testing.T) {
	b, err := NewBudget(BudgetSettings{})
	require.NoError(t, err)
	classes := b.Classes()
	assert.Equal(t, []string{"transient", "contention", "overload"}, classes)
	classes[0] = "changed"
	assert.Equal(t, "transient", b.Classes()[0], "the caller's slice is its own")
	level := func(class string) [2]float64 {
		available, capacity := b.Tokens(class)
		return [2]float64{available, capacity}
	}
	assert.Equal(t, [2]float64{10, 10}, level("transient"), "full: half of Max is spendable")
	assert.Equal(t, [2]float64{10, 10}, level("overload"))
	assert.Equal(t, [2]float64{12.8, 12.8}, level("contention"))
	assert.Equal(t, [2]float64{0, 0}, level("deadlock"), "not a class")

	throttle := sqlServerErr(40501)
	for range 4 {
		require.True(t, b.withdraw(failure(throttle, chargeNone)))
	}
	assert.Equal(t, [2]float64{2, 10}, level("overload"), "four overload failures cost 8")
	assert.Equal(t, [2]float64{2, 10}, level("transient"), "from the bucket transient failures share")
	assert.True(t, b.withdraw(failure(throttle, chargeNone)), "2 pays for one more")
	assert.Equal(t, [2]float64{0, 10}, level("overload"))
	assert.False(t, b.withdraw(failure(throttle, chargeNone)), "0 pays for none")
	assert.Equal(t, [2]float64{0, 10}, level("transient"), "never below zero, though the bucket is")
	assert.Equal(t, [2]float64{12.8, 12.8}, level("contention"), "overload costs the pool nothing")

	require.True(t, b.withdraw(failure(sqlServerErr(1205), chargeNone)))
	assert.InDelta(t, 12.7, level("contention")[0], 1e-9)
	for range 20 {
		b.earn()
	}
	assert.InDelta(t, 0, level("overload")[0], 1e-9, "20 successes bring the bucket (8) back to half")
	assert.Equal(t, 12.8, level("contention")[0], "and refill the pool")
	for range 100 {
		b.earn()
	}
	assert.Equal(t, [2]float64{10, 10}, level("overload"), "100 more fill it")

	var none *Budget
	available, capacity := none.Tokens("transient")
	assert.Zero(t, available+capacity, "a budget that is off holds nothing")
}

// A hot row, as the budget sees it: in each round every writer but one
// fails with a contention error and the one commits. The default budget
// pays for every failure of every round with up to 65 writers on one
// handle, however long it lasts, and the failures may be retried or be
// the last of their rule (charged all the same); with 66 writers, one
// failure more than a success pays for, the pool drains and retries are
// refused: the ratio a success pays for is the setting's, not unbounded.
func TestBudgetPaysForAHotRow(t *testing.T) {
	for _, writers := range []int{2, 4, 12, 32, 64, 65} {
		for _, victim := range []error{sqlServerErr(1205), pgErr("40001"), pgErr("40P01")} {
			b, err := NewBudget(BudgetSettings{})
			require.NoError(t, err)
			for round := range 2_000 {
				for w := 1; w < writers; w++ {
					if round%7 == 0 && w == 1 {
						b.settle(failure(victim, chargeFail)) // its retries were used up
						continue
					}
					require.True(t, b.withdraw(failure(victim, chargeNone)), "%d writers, %v: round %d, writer %d refused", writers, victim, round, w)
				}
				b.earn()
			}
		}
	}
	b, err := NewBudget(BudgetSettings{})
	require.NoError(t, err)
	refused := 0
	for range 2_000 {
		for w := 1; w < 66; w++ {
			if !b.withdraw(failure(sqlServerErr(1205), chargeNone)) {
				refused++
			}
		}
		b.earn()
	}
	assert.Positive(t, refused, "66 writers: one failure a round more than a success pays for")
	assert.LessOrEqual(t, refused, 2_000, "about one refusal a round")
}

// Every entry of the class table parses, and the same number is classed
// by the family whose error carries it.
func TestClassTableParses(t *testing.T) {
	rows := 0
	for _, f := range family.All() {
		for _, c := range errorClasses {
			if c.errors != nil {
				rows += len(c.errors(f.Profile()))
			}
		}
	}
	require.Len(t, meanings, rows, "a class row of the family table does not parse, or is there twice")
	for i, c := range errorClasses {
		assert.Equal(t, i, classIndex(c.tok), "errorClasses is indexed by classIndex")
		assert.Equal(t, c.tok, mustToken(t, tokenNames[i]), "tokenNames is indexed by classIndex")
	}
	for _, tc := range []struct {
		err  error
		want budgetClass
	}{
		{sqlServerErr(1205), classContention},
		{sqlServerErr(3960), classContention},
		{sqlServerErr(1222), classOverload},
		{sqlServerErr(40501), classOverload},
		{sqlServerErr(40613), classTransient},
		{sqlServerErr(4060), classTransient},
		{sqlServerErr(701), classOverload},
		{pgErr("55P03"), classOverload},
		{pgErr("25006"), classTransient},
		{pgErr("40P01"), classContention},
		{pgErr("40001"), classContention},
		{pgErr("53300"), classOverload},
		{pgErr("57014"), classOverload},
		{pgErr("08006"), classTransient},
		{fmt.Errorf("read: %w", context.DeadlineExceeded), classOverload},
		{fmt.Errorf("wrapped: %w", sqlServerErr(1205)), classContention},
	} {
		c := factsOf(tc.err, false)
		assert.Equal(t, classNames[tc.want], classNames[c.builtinClass()], "%v", tc.err)
	}
	c := factsOf(sqlServerErr(40613), true)
	assert.Equal(t, classOverload, c.builtinClass(), "an attempt that ran out of its queryTimeout is overload")
}

// The settings' lists move an error between classes: the number, the
// SQLSTATE and the named conditions.
func TestBudgetClassOverrides(t *testing.T) {
	b, err := NewBudget(BudgetSettings{Contention: "40613 | 1222", Overload: "1205", Transient: "timeout 57014"})
	require.NoError(t, err)
	for _, tc := range []struct {
		err  error
		want budgetClass
	}{
		{sqlServerErr(40613), classContention},
		{sqlServerErr(1222), classContention},
		{sqlServerErr(1205), classOverload},
		{fmt.Errorf("read: %w", context.DeadlineExceeded), classTransient},
		{pgErr("57014"), classTransient},
		{pgErr("40P01"), classContention},
		{sqlServerErr(3960), classContention},
	} {
		c := factsOf(tc.err, false)
		assert.Equal(t, classNames[tc.want], classNames[b.classOf(&c)], "%v", tc.err)
	}
	b, err = NewBudget(BudgetSettings{Transient: "badconn"})
	require.NoError(t, err)
	c := factsOf(fmt.Errorf("x: %w", context.DeadlineExceeded), false)
	assert.Equal(t, classOverload, b.classOf(&c))
}

// Allowance: half the capacity over the class's cost (for contention the
// contention pool's), per family.
func TestBudgetAllowance(t *testing.T) {
	b, err := NewBudget(BudgetSettings{})
	require.NoError(t, err)
	for _, tc := range []struct {
		driver, tok string
		want        int
	}{
		{"sqlserver", "1205", 128}, {"sqlserver", "40613", 10}, {"sqlserver", "40501", 5}, {"sqlserver", "1222", 5},
		{"mysql", "1213", 128}, {"mysql", "1205", 5}, {"pgx", "40P01", 128}, {"postgres", "40001", 128},
		{"pgx", "57014", 5}, {"pgx", "08006", 10}, {"sqlite", "1205", 10}, {"sqlserver", "timeout", 5}, {"mysql", "badconn", 10},
	} {
		assert.Equal(t, tc.want, b.Allowance(tc.driver, tc.tok), "%s %s", tc.driver, tc.tok)
	}
	b, err = NewBudget(BudgetSettings{Max: 60, Transient: "1205", Contention: "badconn"})
	require.NoError(t, err)
	assert.Equal(t, 30, b.Allowance("sqlserver", "1205"), "moved to transient")
	assert.Equal(t, 300, b.Allowance("mysql", "badconn"), "moved to contention")
	var off *Budget
	assert.Equal(t, -1, off.Allowance("sqlserver", "1205"))
}

func mustToken(t *testing.T, s string) token {
	t.Helper()
	tok, err := parseToken(s)
	require.NoError(t, err)
	return tok
}
