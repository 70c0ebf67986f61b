package otel

import (
	"context"
	"errors"
	"strconv"
	"syscall"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/crl-go/crl/core"
)

// The error types of errors that carry no status code. Together with the
// status codes they are every value error.type takes (and panic, on the
// span of an operation that panicked): a bounded set, because error.type
// is a label of the metrics too.
const (
	errorTypeTimeout     = "timeout"      // a time limit ran out (core.IsTimeout)
	errorTypeCanceled    = "canceled"     // the caller's context was cancelled
	errorTypeBadConn     = "badconn"      // the connection broke (core.IsBadConn)
	errorTypeCircuitOpen = "circuit_open" // the circuit breaker refused the operation: nothing ran
	errorTypePanic       = "panic"        // the operation panicked
)

// errorCodes returns the db.response.status_code and the error.type of an
// operation that failed with err. token is the rule token that fired on
// err, "" when none did.
//
// The status code is the code the database sent, as the conventions name
// it for each system: SQL Server's error number, MySQL's and MariaDB's
// error number, PostgreSQL's SQLSTATE; "" when err carries none (a
// network failure, a context's end, an error of crl's). error.type is the
// status code when there is one; else token (timeout, badconn, or a
// Windows socket number such as 10054: what the rule that fired saw);
// else timeout, canceled, badconn, the Windows socket number of another
// network failure (10061 for a refused connection, which crl's rules name
// so), and _OTHER for anything else. A circuit-open refusal, whose error
// is the one of an earlier operation, has no status code and the type
// circuit_open. Never a Go type name nor a message, which would make the
// metrics' series unbounded.
func errorCodes(err error, token string) (status, errType string) {
	if err == nil {
		return "", semconv.ErrorTypeOther.Value.AsString()
	}
	if nothingRan(err) {
		return "", errorTypeCircuitOpen
	}
	if status = statusCode(err); status != "" {
		return status, status
	}
	if token != "" {
		return "", token
	}
	switch {
	case core.IsTimeout(err):
		return "", errorTypeTimeout
	case errors.Is(err, context.Canceled):
		return "", errorTypeCanceled
	case core.IsBadConn(err):
		return "", errorTypeBadConn
	}
	if n, ok := core.ErrorNumber(err); ok { // no status code: a socket number
		return "", strconv.FormatInt(int64(n), 10)
	}
	return "", semconv.ErrorTypeOther.Value.AsString()
}

// appendError adds the db.response.status_code (when there is one) and
// the error.type of an operation that failed with err (see errorCodes).
func appendError(a []attribute.KeyValue, err error, token string) []attribute.KeyValue {
	status, errType := errorCodes(err, token)
	if status != "" {
		a = append(a, semconv.DBResponseStatusCodeKey.String(status))
	}
	return append(a, semconv.ErrorTypeKey.String(errType))
}

// statusCode is the code the database sent in err, "" when none: an error
// number (core.ErrorNumber: go-mssqldb's SQLErrorNumber, go-sql-driver's
// MySQLError) that is not a network failure's socket number, else a
// SQLSTATE (pgx, lib/pq).
func statusCode(err error) string {
	if n, ok := core.ErrorNumber(err); ok && !fromNetwork(err, n) {
		return strconv.FormatInt(int64(n), 10)
	}
	var st interface{ SQLState() string }
	if errors.As(err, &st) {
		if s := st.SQLState(); validSQLState(s) {
			return s
		}
	}
	return ""
}

// fromNetwork reports whether n, the number core.ErrorNumber gave for err,
// is the Windows socket number of a network failure, not a number the
// server sent.
func fromNetwork(err error, n int32) bool {
	var numbered interface{ SQLErrorNumber() int32 }
	if errors.As(err, &numbered) {
		return false // core prefers the server's number
	}
	var errno syscall.Errno
	switch n {
	case 10053:
		errno = syscall.ECONNABORTED
	case 10054:
		errno = syscall.ECONNRESET
	case 10060:
		errno = syscall.ETIMEDOUT
	case 10061:
		errno = syscall.ECONNREFUSED
	default:
		return false
	}
	return errors.Is(err, errno)
}

// validSQLState reports five characters of 0-9 and A-Z, the shape of a
// SQLSTATE: anything else a SQLState method returns is not one, and would
// not be a bounded label either.
func validSQLState(s string) bool {
	if len(s) != 5 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return true
}

// nothingRan reports the error of an operation that the circuit breaker
// refused before any attempt: it carries the error of the earlier
// operation that opened the breaker, which this operation did not get.
func nothingRan(err error) bool {
	var re *core.RetryError
	return errors.As(err, &re) && re.Attempts == 0 && errors.Is(re.Reason, core.ErrCircuitOpen)
}
