package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
)

// Every retryBudget setting has a range; a value out of it is an error that
// names the value as written and the range, through the DSN, the properties
// file and the option in code alike.
func TestRetryBudgetRanges(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"max=1e16", "max=1e16: expected a number from 2 to 1000000"},
		{"max=1e9", "max=1e9: expected a number from 2 to 1000000"},
		{"max=0.0001", "max=0.0001: expected a number from 2 to 1000000"},
		{"max=0", "max=0: expected a number from 2 to 1000000"},
		{"max=-1", "max=-1: expected a number from 2 to 1000000"},
		{"earn=1e17", "earn=1e17: expected a number from 0.001 to 1"},
		{"earn=0", "earn=0: expected a number from 0.001 to 1"},
		{"earn=2", "earn=2: expected a number from 0.001 to 1"},
		{"timeoutCost=1e17", "overloadCost=1e17: expected a number from 0.001 to 1000"},
		{"overloadcost=0.0001", "overloadCost=0.0001: expected a number from 0.001 to 1000"},
		{"contentionCost=2000", "contentionCost=2000: expected a number from 0.001 to 1000"},
		{"contentionPerSuccess=0.5", "contentionPerSuccess=0.5: expected a number from 1 to 10000"},
		{"max=3", "max=3 with overloadCost=2: expected max of at least 2 × overloadCost (4)"},
		{"max=10,timeoutCost=6", "max=10 with overloadCost=6: expected max of at least 2 × overloadCost (12)"},
		{"overloadCost=3,timeoutCost=3", "overloadCost given twice (timeoutCost is its former name)"},
		{"contention=1205|40P1", `contention="1205|40P1": "40P1" is not a number`},
		{"contention=1205,transient=1205", "1205 is in both contention= and transient="},
		{"hot=1205", `"hot" is not a budget setting`},
		{"max=NaN", `max="NaN": expected a number`},
		{"earn=Inf", `earn="Inf": expected a number`},
		{"max=0x10", `max="0x10": expected a number`},
		{"refill=1", "refill=1: the retry budget no longer refills with time"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			_, _, err := ParseDSN("sqlserver", "server=h;retryBudget={"+tc.value+"}")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.ErrorIs(t, err, ErrInvalidValue)
			assert.NotContains(t, err.Error(), "not negative")

			_, _, err = ParseDSN("sqlserver", "sqlserver://h?retryBudget="+tc.value)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)

			_, err = ParseProperties("mssql-jdbc.properties", []byte("retryBudget="+tc.value+"\n"))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	for _, ok := range []string{"max=2,timeoutCost=1", "max=1000000,earn=1,timeoutCost=1000", "earn=0.001", "max=4", "timeoutCost=5",
		"contentionCost=0.05,overloadCost=3", "contentionPerSuccess=200", "contention=1205|3960,overload=40613,transient=timeout"} {
		_, _, err := ParseDSN("sqlserver", "server=h;retryBudget={"+ok+"}")
		assert.NoError(t, err, ok)
	}
}

func TestRetryBudgetOptionRanges(t *testing.T) {
	for _, tc := range []struct {
		s    core.BudgetSettings
		want string
	}{
		{core.BudgetSettings{Max: -1}, "max=-1: expected a number from 2 to 1000000"},
		{core.BudgetSettings{Max: 1e16}, "max=1e+16: expected a number from 2 to 1000000"},
		{core.BudgetSettings{EarnPerAttempt: 1e17}, "earn=1e+17: expected a number from 0.001 to 1"},
		{core.BudgetSettings{OverloadCost: 1e17}, "overloadCost=1e+17: expected a number from 0.001 to 1000"},
		{core.BudgetSettings{Max: 3}, "max=3 with overloadCost=2"},
		{core.BudgetSettings{Overload: "40x"}, `overload="40x"`},
	} {
		_, _, err := NewRuntime("sqlserver", "", WithRetryBudget(tc.s), WithPropertiesFile(""))
		require.Error(t, err, "%+v", tc.s)
		assert.Contains(t, err.Error(), tc.want)
		assert.Contains(t, err.Error(), "retryBudget")
	}
}

// A retryBudget value that core rejects is a ValueError that wraps core's
// error, from the DSN and the file as from an option.
func TestRetryBudgetRangeErrorWrapsCore(t *testing.T) {
	for _, value := range []string{"max=1e9", "max=3"} {
		_, _, err := ParseDSN("sqlserver", "sqlserver://h?retryBudget="+value)
		var ve *ValueError
		require.ErrorAs(t, err, &ve, value)
		require.Error(t, ve.Err, "%s: the cause", value)
		assert.Contains(t, ve.Err.Error(), "expected", value)
	}
}
