// Package limits holds the ranges of the settings that both core (which
// validates what it is given) and config (which names the value as it was
// written) check, so that each range and its message exist once.
package limits

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The ranges of the retry budget's settings (docs/semantics.md, "The retry
// budget").
const (
	BudgetMaxLow, BudgetMaxHigh   = 2, 1_000_000
	BudgetEarnLow, BudgetEarnHigh = 0.001, 1
	BudgetCostLow, BudgetCostHigh = 0.001, 1000
	// Contention failures a success pays for.
	BudgetPerSuccessLow, BudgetPerSuccessHigh = 1, 10_000
)

// BudgetSetting reports a value out of the range of the budget setting
// name (max, earn, contentionCost, contentionPerSuccess or overloadCost,
// case-insensitive) with
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
	case "contentionpersuccess":
		low, high = BudgetPerSuccessLow, BudgetPerSuccessHigh
	default:
		return fmt.Errorf("expected a budget setting: max, earn, contentionCost, contentionPerSuccess or overloadCost, not %q", name)
	}
	if math.IsNaN(v) || v < low || v > high {
		return fmt.Errorf("expected a number from %s to %s", strconv.FormatFloat(low, 'f', -1, 64), strconv.FormatFloat(high, 'f', -1, 64))
	}
	return nil
}

// The ranges of the connection loop's settings and of queryTimeout, as
// both core.Policy.Validate and config's checks of values set in code
// report them. A value from a DSN or the properties file is read by
// config's parsers, which name the range in the form it is written there
// ("expected seconds from 1 to 60").
const (
	MaxRetryCount      = 255 // the largest retryCount of a rule, and connectRetryCount
	MinConnectInterval = time.Second
	MaxConnectInterval = time.Minute
	MaxLoginTimeout    = 65535 * time.Second
)

// Defaults of the JDBC driver, used where a core.Policy field is zero.
const (
	DefaultConnectRetryCount    = 1
	DefaultConnectRetryInterval = 10 * time.Second
	DefaultLoginTimeout         = 30 * time.Second
)

// MaxBreakerFailures is the largest BreakerSettings.Failures: the count of
// failures in a row shares the breaker's state word with its state.
const MaxBreakerFailures = 1<<30 - 1

// MaxBreakerOpenFor is the longest BreakerSettings.OpenFor.
const MaxBreakerOpenFor = 24 * time.Hour

// ConnectRetryCount reports a connectRetryCount out of range: 0..255, or
// -1 (core.Disabled, the zero value meaning the default 1).
func ConnectRetryCount(n int) error {
	if n < -1 || n > MaxRetryCount {
		return errors.New("expected 0 (off) to 255, or core.Disabled")
	}
	return nil
}

// ConnectRetryInterval reports a connectRetryInterval out of range: 1 s
// to 60 s, or 0 (the default, 10 s).
func ConnectRetryInterval(d time.Duration) error {
	if d != 0 && (d < MinConnectInterval || d > MaxConnectInterval) {
		return errors.New("expected 1s to 60s")
	}
	return nil
}

// LoginTimeout reports a loginTimeout out of range: 0 (the default, 30 s)
// to 65535 s, as the JDBC driver takes it.
func LoginTimeout(d time.Duration) error {
	if d < 0 || d > MaxLoginTimeout {
		return errors.New("expected 0s (the default, 30s) to 65535s")
	}
	return nil
}

// QueryTimeout reports a queryTimeout out of range: a time that is not
// negative, or -1 ns (core.JDBCQueryTimeoutZero, JDBC's queryTimeout=0).
func QueryTimeout(d time.Duration) error {
	if d < -1 {
		return errors.New("expected a time that is not negative, or core.JDBCQueryTimeoutZero")
	}
	return nil
}

// MaxWait is the ceiling at which computed waits saturate instead of
// overflowing: 2147483647 seconds, the largest wait the JDBC driver can
// express (it keeps waits in a Java int of seconds, and overflows past it).
const MaxWait = time.Duration(math.MaxInt32) * time.Second

// ParseTime reads a time as the rule language and the DSN keys write it:
// a bare number is seconds (the JDBC unit, possibly fractional, saturating
// at MaxWait), else a time with a unit as Go writes it (100ms, 1.5s, 2m,
// 1m30s). A negative time is an error that names the value.
func ParseTime(s string) (time.Duration, error) {
	if s == "" {
		return 0, errors.New(`"" is an empty time, expected seconds such as 2 or a time with a unit such as 100ms`)
	}
	if IsDecimal(s) {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number, expected seconds such as 2 or a time with a unit such as 100ms", s)
		}
		return secondsToDuration(f), nil
	}
	if s[0] == '-' || s[0] == '+' {
		return 0, fmt.Errorf("%q is not a number, expected a time that is not negative", s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number, expected seconds such as 2 or a time with a unit such as 100ms, 1.5s or 2m", s)
	}
	return d, nil
}

func secondsToDuration(f float64) time.Duration {
	ns := f * float64(time.Second)
	if ns >= float64(MaxWait) || math.IsInf(ns, 0) {
		return MaxWait
	}
	return time.Duration(math.Round(ns))
}

// IsDecimal reports whether s is digits with at most one '.', and at least
// one digit.
func IsDecimal(s string) bool {
	if s == "" || strings.Count(s, ".") > 1 || s == "." {
		return false
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && s[i] != '.' {
			return false
		}
	}
	return true
}
