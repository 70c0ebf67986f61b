package core

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failure is the Decision of a retryable failure err, as the loops build it.
func failure(err error, charge charge) *Decision {
	return &Decision{blame: classify(err, false), charge: charge}
}

type sqlServerErr int32

func (e sqlServerErr) Error() string         { return fmt.Sprintf("mssql: error %d", int32(e)) }
func (e sqlServerErr) SQLErrorNumber() int32 { return int32(e) }

type pgErr string

func (e pgErr) Error() string    { return "pg: " + string(e) }
func (e pgErr) SQLState() string { return string(e) }

// A transient failure costs 1, contention 0.1, overload (a time-out
// included) 2; a retry runs while at least half of Max is left after its
// failure paid; the charge is taken even when the retry is refused;
// earning stops at Max.
func TestBudgetAccounting(t *testing.T) {
	b, err := NewBudget(BudgetSettings{Max: 10})
	require.NoError(t, err)
	assert.Equal(t, 10.0, b.Available())
	b.earn()
	assert.Equal(t, 10.0, b.Available(), "a full budget stays full")
	timeout := fmt.Errorf("read: %w", context.DeadlineExceeded)
	assert.True(t, b.withdraw(failure(timeout, chargeNone)))
	assert.Equal(t, 8.0, b.Available())
	assert.True(t, b.withdraw(failure(sqlServerErr(40613), chargeNone)))
	assert.True(t, b.withdraw(failure(sqlServerErr(40613), chargeNone)))
	assert.True(t, b.withdraw(failure(sqlServerErr(1205), chargeNone)))
	assert.InDelta(t, 5.9, b.Available(), 1e-9, "a deadlock victim costs 0.1")
	assert.False(t, b.withdraw(failure(sqlServerErr(40613), chargeNone)), "4.9 left is below half")
	assert.InDelta(t, 4.9, b.Available(), 1e-9)
	b.settle(failure(sqlServerErr(40501), chargeFail))
	assert.InDelta(t, 2.9, b.Available(), 1e-9, "throttling is overload")
	b.settle(failure(sqlServerErr(40501), chargeFail))
	b.settle(failure(timeout, chargeFail))
	b.settle(failure(sqlServerErr(4060), chargeFail))
	assert.Equal(t, 0.0, b.Available(), "never below zero")
	for range 10 {
		b.earn()
	}
	assert.InDelta(t, 1.0, b.Available(), 1e-9, "ten successes earn one token")

	d, err := NewBudget(BudgetSettings{})
	require.NoError(t, err)
	assert.Equal(t, 20.0, d.Available(), "the default holds 20 tokens")

	var none *Budget // off: everything allowed
	assert.True(t, none.withdraw(failure(timeout, chargeNone)))
	none.earn()
	none.settle(failure(timeout, chargeFail))
}

// Every entry of the class table parses, and the same number is classed
// by the family whose error carries it.
func TestClassTableParses(t *testing.T) {
	require.Len(t, builtinClasses, len(classTable), "an entry of classTable does not parse, or is there twice")
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
		{pgErr("40P01"), classContention},
		{pgErr("40001"), classContention},
		{pgErr("53300"), classOverload},
		{pgErr("57014"), classOverload},
		{pgErr("08006"), classTransient},
		{fmt.Errorf("read: %w", context.DeadlineExceeded), classOverload},
		{fmt.Errorf("wrapped: %w", sqlServerErr(1205)), classContention},
	} {
		c := classify(tc.err, false)
		assert.Equal(t, classNames[tc.want], classNames[c.builtinClass()], "%v", tc.err)
	}
	c := classify(sqlServerErr(40613), true)
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
		c := classify(tc.err, false)
		assert.Equal(t, classNames[tc.want], classNames[b.classOf(&c)], "%v", tc.err)
	}
	b, err = NewBudget(BudgetSettings{Transient: "badconn"})
	require.NoError(t, err)
	c := classify(fmt.Errorf("x: %w", context.DeadlineExceeded), false)
	assert.Equal(t, classOverload, b.classOf(&c))
}

// Allowance: half the capacity over the class's cost, per family.
func TestBudgetAllowance(t *testing.T) {
	b, err := NewBudget(BudgetSettings{})
	require.NoError(t, err)
	for _, tc := range []struct {
		driver, tok string
		want        int
	}{
		{"sqlserver", "1205", 100}, {"sqlserver", "40613", 10}, {"sqlserver", "40501", 5}, {"sqlserver", "1222", 5},
		{"mysql", "1213", 100}, {"mysql", "1205", 5}, {"pgx", "40P01", 100}, {"postgres", "40001", 100},
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
