package core

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/crl-go/crl/internal/text/editdist"
)

// A token is one entry of a rule's error list, encoded as an int64 key so
// that server error numbers, SQLSTATE codes and the named conditions share
// one lookup table:
//
//   - a server error number n (0 ≤ n ≤ MaxInt32) is the key n;
//   - a five-character SQLSTATE with at least one letter (such as 40P01) is
//     stateBase plus its base-36 value; an all-digit SQLSTATE such as 40001
//     is the error number 40001, so both spellings are one token;
//   - the named conditions timeout and badconn, and the classes by
//     meaning (deadlock, serialization, lockTimeout, failover, throttle),
//     are negative keys, indexes of errorClasses (classIndex).
type token int64

// The negative tokens, in the order rules are printed: the classes by
// meaning, then the named conditions (their values are those rules
// always had).
const (
	tokenDeadlock token = -7 + iota
	tokenSerialization
	tokenLockTimeout
	tokenFailover
	tokenThrottle
	tokenBadConn // -2
	tokenTimeout // -1
)

const (
	stateBase token = 1 << 40
)

// tokenNames are the words rules write for the negative tokens, by
// classIndex; a rule may write them in any case.
var tokenNames = [...]string{
	-1 - tokenTimeout:       "timeout",
	-1 - tokenBadConn:       "badconn",
	-1 - tokenDeadlock:      "deadlock",
	-1 - tokenSerialization: "serialization",
	-1 - tokenLockTimeout:   "lockTimeout",
	-1 - tokenFailover:      "failover",
	-1 - tokenThrottle:      "throttle",
}

// classWords lists the class words for messages.
var classWords = classWordsWhere(func(*errorClass) bool { return true })

// classWordsWhere lists the words of the classes for which keep reports
// true, in the order rules are printed, for messages.
func classWordsWhere(keep func(*errorClass) bool) string {
	var words []string
	for t := tokenDeadlock; t < 0; t++ {
		if keep(classOf(t)) {
			words = append(words, t.String())
		}
	}
	return strings.Join(words, ", ")
}

// expectedToken is what an error token is expected to be, for messages.
var expectedToken = "expected an error number, a five-character SQLSTATE, or a class: " + classWords

// namedToken returns the negative token that the word s names, in any
// case.
func namedToken(s string) (token, bool) {
	for i, n := range tokenNames {
		if strings.EqualFold(s, n) {
			return token(-1 - i), true
		}
	}
	return 0, false
}

// parseToken reads one error token of a rule. It does not trim.
func parseToken(s string) (token, error) {
	if s == "" {
		return 0, errors.New(`"" is an empty error token, ` + expectedToken)
	}
	if isDigits(s) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n > 1<<31-1 {
			return 0, fmt.Errorf("%q is not an error number between 0 and 2147483647", s)
		}
		return token(n), nil
	}
	if t, ok := namedToken(s); ok {
		return t, nil
	}
	if t, ok := stateToken(s); ok {
		return t, nil
	}
	return 0, fmt.Errorf("%q is not a number, a SQLSTATE or a class, %s%s", s, expectedToken, didYouMean(s))
}

// didYouMean suggests the class word closest to s, when s is a near miss
// of one ("" otherwise).
func didYouMean(s string) string {
	if len(s) < 4 {
		return ""
	}
	best, bestDist := "", 3
	for _, n := range tokenNames {
		if d := editdist.Distance([]rune(strings.ToLower(s)), []rune(strings.ToLower(n)), bestDist); d < bestDist {
			best, bestDist = n, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + best + "?)"
}

// stateToken encodes a SQLSTATE. An all-digit state is an error number.
func stateToken(s string) (token, bool) {
	if len(s) != 5 {
		return 0, false
	}
	var v int64
	digits := true
	for i := 0; i < 5; i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			v = v*36 + int64(c-'0')
		case c >= 'A' && c <= 'Z':
			v = v*36 + int64(c-'A') + 10
			digits = false
		case c >= 'a' && c <= 'z':
			v = v*36 + int64(c-'a') + 10
			digits = false
		default:
			return 0, false
		}
	}
	if digits {
		n, _ := strconv.ParseInt(s, 10, 64)
		return token(n), true
	}
	return stateBase + token(v), true
}

// String prints the token the way a rule writes it.
func (t token) String() string {
	switch {
	case t < 0 && classIndex(t) < len(tokenNames):
		return tokenNames[classIndex(t)]
	case t >= stateBase:
		v := int64(t - stateBase)
		var b [5]byte
		for i := 4; i >= 0; i-- {
			d := byte(v % 36)
			v /= 36
			if d < 10 {
				b[i] = '0' + d
			} else {
				b[i] = 'A' + d - 10
			}
		}
		return string(b[:])
	default:
		return strconv.FormatInt(int64(t), 10)
	}
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
