// Package limits holds the ranges of the settings that both core (which
// validates what it is given) and config (which names the value as it was
// written) check, so that each range and its message exist once.
package limits

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The ranges of the retry budget's settings (docs/semantics.md, "The retry
// budget").
const (
	BudgetMaxLow, BudgetMaxHigh   = 2, 1_000_000
	BudgetEarnLow, BudgetEarnHigh = 0.001, 1
	BudgetCostLow, BudgetCostHigh = 0.001, 1000
)

// BudgetSetting reports a value out of the range of the budget setting
// name (max, earn, contentionCost or overloadCost, case-insensitive) with
// an error that says what is expected ("expected a number from 2 to
// 1000000"), for the caller to prefix with the value as it names it.
func BudgetSetting(name string, v float64) error {
	var low, high float64
	switch strings.ToLower(name) {
	case "max":
		low, high = BudgetMaxLow, BudgetMaxHigh
	case "earn":
		low, high = BudgetEarnLow, BudgetEarnHigh
	case "contentioncost", "overloadcost":
		low, high = BudgetCostLow, BudgetCostHigh
	default:
		return fmt.Errorf("expected a budget setting: max, earn, contentionCost or overloadCost, not %q", name)
	}
	if math.IsNaN(v) || v < low || v > high {
		return fmt.Errorf("expected a number from %s to %s", strconv.FormatFloat(low, 'f', -1, 64), strconv.FormatFloat(high, 'f', -1, 64))
	}
	return nil
}
