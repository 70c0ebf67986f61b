package core

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/crl-go/crl/internal/sqlscan"
)

// MaxWait is the ceiling at which computed waits saturate instead of
// overflowing: 2147483647 seconds, the largest wait the JDBC driver can
// express (it keeps waits in a Java int of seconds, and overflows past it).
const MaxWait = time.Duration(math.MaxInt32) * time.Second

// defaultChange is the JDBC driver's retryChange when a rule omits it.
const defaultChange = 2 * time.Second

// waitSchedule computes the waits of a rule, one per retry, saturating at
// MaxWait. Retry i (0-based) waits initial + i*change for '+' and
// initial * factor^i for '*', as the JDBC driver computes them.
func waitSchedule(count int, initial time.Duration, op byte, change time.Duration, factor float64) []time.Duration {
	waits := make([]time.Duration, count)
	if op == '*' {
		w := float64(initial)
		for i := range waits {
			if w >= float64(MaxWait) || math.IsInf(w, 0) || math.IsNaN(w) {
				w = float64(MaxWait)
			}
			waits[i] = time.Duration(math.Round(w))
			w *= factor
		}
		return waits
	}
	w := initial
	for i := range waits {
		if w > MaxWait {
			w = MaxWait
		}
		waits[i] = w
		if MaxWait-w < change {
			w = MaxWait
		} else {
			w += change
		}
	}
	return waits
}

// ParseTime reads a time as the rule language and the DSN keys write it:
// a bare number is seconds (the JDBC unit, possibly fractional, saturating
// at MaxWait), else a time with a unit as Go writes it (100ms, 1.5s, 2m,
// 1m30s). A negative time is an error that names the value.
func ParseTime(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("an empty time, expected seconds such as 2 or a time with a unit such as 100ms")
	}
	if isDecimal(s) {
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

// parseFactor reads the factor of a '*' rule: a number, possibly fractional.
func parseFactor(s string) (float64, error) {
	if !isDecimal(s) {
		return 0, fmt.Errorf("%q is not a number, expected a factor such as 2 or 1.5", s)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a number, expected a factor such as 2 or 1.5", s)
	}
	return f, nil
}

func secondsToDuration(f float64) time.Duration {
	ns := f * float64(time.Second)
	if ns >= float64(MaxWait) || math.IsInf(ns, 0) {
		return MaxWait
	}
	return time.Duration(math.Round(ns))
}

// isDecimal reports whether s is digits with at most one '.', and at least
// one digit.
func isDecimal(s string) bool {
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

// Jitter says how a wait of the schedule is randomised before the loop
// sleeps. The zero value, JitterNone, keeps the exact JDBC schedule.
type Jitter uint8

const (
	// JitterNone waits exactly the schedule (the JDBC behaviour).
	JitterNone Jitter = iota
	// JitterFull waits a uniform random time in [0, wait] ("full jitter").
	JitterFull
	// JitterEqual waits wait/2 plus a uniform random time in [0, wait/2].
	JitterEqual
)

// ParseJitter reads "none", "full" or "equal" (case-insensitive; "" is none).
func ParseJitter(s string) (Jitter, error) {
	switch strings.ToLower(sqlscan.TrimSpace(s)) {
	case "", "none":
		return JitterNone, nil
	case "full":
		return JitterFull, nil
	case "equal":
		return JitterEqual, nil
	}
	return 0, fmt.Errorf("core: jitter %q: expected none, full or equal", s)
}

// String returns none, full or equal.
func (j Jitter) String() string {
	switch j {
	case JitterFull:
		return "full"
	case JitterEqual:
		return "equal"
	}
	return "none"
}

// apply returns the wait to sleep; random returns a value in [0, 1).
func (j Jitter) apply(w time.Duration, random func() float64) time.Duration {
	switch j {
	case JitterFull:
		return time.Duration(float64(w) * random())
	case JitterEqual:
		half := w / 2
		return half + time.Duration(float64(w-half)*random())
	}
	return w
}
