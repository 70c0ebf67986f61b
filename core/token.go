package core

import (
	"fmt"
	"strconv"
	"strings"
)

// A token is one entry of a rule's error list, encoded as an int64 key so
// that server error numbers, SQLSTATE codes and the named conditions share
// one lookup table:
//
//   - a server error number n (0 ≤ n ≤ MaxInt32) is the key n;
//   - a five-character SQLSTATE with at least one letter (such as 40P01) is
//     stateBase plus its base-36 value; an all-digit SQLSTATE such as 40001
//     is the error number 40001, so both spellings are one token;
//   - the named conditions timeout and badconn are negative keys.
type token int64

const (
	tokenTimeout token = -1
	tokenBadConn token = -2
	stateBase    token = 1 << 40
)

// Names of the two named conditions, as written in rules.
const (
	conditionTimeout = "timeout"
	conditionBadConn = "badconn"
)

// parseToken reads one error token of a rule. It does not trim.
func parseToken(s string) (token, error) {
	if s == "" {
		return 0, fmt.Errorf(`"" is an empty error token, expected an error number, a SQLSTATE, %q or %q`, conditionTimeout, conditionBadConn)
	}
	if isDigits(s) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n > 1<<31-1 {
			return 0, fmt.Errorf("%q is not an error number between 0 and 2147483647", s)
		}
		return token(n), nil
	}
	switch strings.ToLower(s) {
	case conditionTimeout:
		return tokenTimeout, nil
	case conditionBadConn:
		return tokenBadConn, nil
	}
	if t, ok := stateToken(s); ok {
		return t, nil
	}
	return 0, fmt.Errorf("%q is not a number, expected an error number, a five-character SQLSTATE, %q or %q", s, conditionTimeout, conditionBadConn)
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
	case t == tokenTimeout:
		return conditionTimeout
	case t == tokenBadConn:
		return conditionBadConn
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
