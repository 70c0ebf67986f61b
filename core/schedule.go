package core

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/crl-go/crl/internal/tables/limits"
	"github.com/crl-go/crl/internal/text/sqlscan"
)

// defaultChange is the JDBC driver's retryChange when a rule omits it.
const defaultChange = 2 * time.Second

// waitSchedule computes the waits of a rule, one per retry, saturating at
// limits.MaxWait. Retry i (0-based) waits initial + i*change for '+' and
// initial * factor^i for '*', as the JDBC driver computes them.
func waitSchedule(count int, initial time.Duration, op byte, change time.Duration, factor float64) []time.Duration {
	waits := make([]time.Duration, count)
	if op == '*' {
		w := float64(initial)
		for i := range waits {
			if w >= float64(limits.MaxWait) || math.IsInf(w, 0) || math.IsNaN(w) {
				w = float64(limits.MaxWait)
			}
			waits[i] = time.Duration(math.Round(w))
			w *= factor
		}
		return waits
	}
	w := initial
	for i := range waits {
		if w > limits.MaxWait {
			w = limits.MaxWait
		}
		waits[i] = w
		if limits.MaxWait-w < change {
			w = limits.MaxWait
		} else {
			w += change
		}
	}
	return waits
}

// parseFactor reads the factor of a '*' rule: a number, possibly fractional.
func parseFactor(s string) (float64, error) {
	if !limits.IsDecimal(s) {
		return 0, fmt.Errorf("%q is not a number, expected a factor such as 2 or 1.5", s)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a number, expected a factor such as 2 or 1.5", s)
	}
	return f, nil
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

// UnmarshalText reads "none", "full" or "equal" (case-insensitive; "" is
// none), as the retryJitter key is written. j is left unchanged on error.
func (j *Jitter) UnmarshalText(text []byte) error {
	switch strings.ToLower(sqlscan.TrimSpace(string(text))) {
	case "", "none":
		*j = JitterNone
	case "full":
		*j = JitterFull
	case "equal":
		*j = JitterEqual
	default:
		return fmt.Errorf("core: jitter %q: expected none, full or equal", text)
	}
	return nil
}

// MarshalText returns none, full or equal.
func (j Jitter) MarshalText() ([]byte, error) { return []byte(j.String()), nil }

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
