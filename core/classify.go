package core

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"reflect"
	"syscall"
)

// numbered is implemented by go-mssqldb's mssql.Error (and any driver error
// that carries a SQL Server error number).
type numbered interface{ SQLErrorNumber() int32 }

// stated is implemented by pgx's *pgconn.PgError and lib/pq's *pq.Error
// from v1.10.6 on; older lib/pq errors carry the SQLSTATE in a field
// only (pqCode).
type stated interface{ SQLState() string }

// Windows socket error numbers that SQL Server users know from error
// messages; network failures map to them.
const (
	wsaConnAborted = 10053
	wsaConnReset   = 10054
	wsaTimedOut    = 10060
	wsaConnRefused = 10061
)

// ErrorNumber returns the error number of err or of any error it wraps:
//   - a server error through SQLErrorNumber() int32 (go-mssqldb's mssql.Error);
//   - the MySQL driver's error number (github.com/go-sql-driver/mysql's
//     *MySQLError, recognised without importing the driver);
//   - a network failure as the Windows socket number SQL Server users know:
//     ECONNRESET → 10054, ECONNABORTED → 10053, ECONNREFUSED → 10061,
//     ETIMEDOUT → 10060.
//
// It reports false for an error without a number, and for nil.
func ErrorNumber(err error) (int32, bool) {
	if err == nil {
		return 0, false
	}
	f := factsOf(err, false)
	return f.number, f.hasNumber
}

// serverNumber finds SQLErrorNumber() in the chain.
func serverNumber(err error) (int32, bool) {
	if n, ok := err.(numbered); ok { // the common case, without allocating
		return n.SQLErrorNumber(), true
	}
	var n numbered
	if errors.As(err, &n) {
		return n.SQLErrorNumber(), true
	}
	return 0, false
}

// socketNumber maps a network failure to its Windows socket number.
func socketNumber(err error) (int32, bool) {
	switch {
	case errors.Is(err, syscall.ECONNRESET):
		return wsaConnReset, true
	case errors.Is(err, syscall.ECONNABORTED):
		return wsaConnAborted, true
	case errors.Is(err, syscall.ECONNREFUSED):
		return wsaConnRefused, true
	case errors.Is(err, syscall.ETIMEDOUT):
		return wsaTimedOut, true
	}
	return 0, false
}

// sqlState returns the five-character SQLSTATE of err or of any error it
// wraps (errorState).
func sqlState(err error) (string, bool) {
	// walk with a type assertion, not errors.As: its target escapes, which
	// would allocate on every classified error.
	st := ""
	walk(err, func(e error) bool {
		st, _ = errorState(e)
		return st != ""
	})
	return st, st != ""
}

// errorState returns the SQLSTATE of one error of a chain: through
// SQLState() string (pgx, lib/pq from v1.10.6), else the Code field of
// lib/pq's Error (every version of lib/pq has it; before v1.10.6 it is
// the only way).
func errorState(e error) (string, bool) {
	if s, ok := e.(stated); ok {
		return s.SQLState(), true
	}
	return pqCode(e)
}

// pqCode reads the Code field (of type ErrorCode, a string) of
// github.com/lib/pq's Error, pointer or value, without importing the
// driver.
func pqCode(e error) (string, bool) {
	v := reflect.ValueOf(e)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "", false
		}
		v = v.Elem()
	}
	t := v.Type()
	if t.Kind() != reflect.Struct || t.Name() != "Error" || t.PkgPath() != "github.com/lib/pq" {
		return "", false
	}
	f := v.FieldByName("Code")
	if !f.IsValid() || f.Kind() != reflect.String || f.Type().Name() != "ErrorCode" || f.Type().PkgPath() != "github.com/lib/pq" {
		return "", false
	}
	return f.String(), f.Len() > 0
}

// mysqlNumber reads the Number field of github.com/go-sql-driver/mysql's
// *MySQLError anywhere in the chain, without importing the driver.
func mysqlNumber(err error) (int32, bool) {
	found := int32(0)
	ok := false
	walk(err, func(e error) bool {
		found, ok = mysqlErrorNumber(e)
		return ok
	})
	return found, ok
}

// mysqlErrorNumber reads the Number field of e when e is a
// *mysql.MySQLError.
func mysqlErrorNumber(e error) (int32, bool) {
	v := reflect.ValueOf(e)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return 0, false
	}
	t := v.Type().Elem()
	if t.Kind() != reflect.Struct || t.Name() != "MySQLError" || t.PkgPath() != "github.com/go-sql-driver/mysql" {
		return 0, false
	}
	f := v.Elem().FieldByName("Number")
	if !f.IsValid() || !f.CanUint() {
		return 0, false
	}
	return int32(f.Uint()), true
}

// walk visits err and every error it wraps, depth first, until visit
// returns true.
func walk(err error, visit func(error) bool) bool {
	for err != nil {
		if visit(err) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if walk(e, visit) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// errorFacts is what the loops know of an error: its number, SQLSTATE,
// family and the named conditions it meets. factsOf is its one
// constructor; ErrorNumber and IsTimeout read it too.
type errorFacts struct {
	number    int32
	hasNumber bool
	state     token // 0 when none, or when it equals the number
	timeout   bool
	family    errFamily // which database family the error's shape says it comes from
	err       error     // for badConn, asked last and only when a rule names badconn
}

// badConn reports the named condition badconn (IsBadConn).
func (f *errorFacts) badConn() bool { return IsBadConn(f.err) }

// factsOf describes err. attemptTimedOut says that the attempt's own time
// limit (queryTimeout) ran out while the caller's context is alive. It
// runs on every failed attempt: one walk over the chain finds the MySQL
// number, the SQLSTATE and the named conditions at once; badconn is asked
// only when a rule names it.
func factsOf(err error, attemptTimedOut bool) errorFacts {
	var w chainFacts
	walk(err, w.visit)
	f := errorFacts{family: familyNone, err: err}
	f.number, f.hasNumber = serverNumber(err)
	switch {
	case f.hasNumber:
		f.family = familyOfNumbered
	case w.isMySQL:
		f.number, f.hasNumber, f.family = w.mysql, true, familyOfMySQL
	default:
		f.number, f.hasNumber = socketNumber(err)
	}
	if w.state != "" {
		f.state, _ = stateToken(w.state)
		if f.family == familyNone && !f.hasNumber {
			f.family = familyOfState
		}
	}
	f.timeout = attemptTimedOut || w.timeout || w.cutoff(f.state)
	return f
}

// cutoff reports a server's execution cut-off in the chain: its MySQL
// number or its SQLSTATE (state) is one of the family's CutoffErrors
// (MySQL 3024, MariaDB 1969, PostgreSQL 57014), whichever error of the
// chain carries it.
func (w *chainFacts) cutoff(state token) bool {
	if w.isMySQL {
		if t, ok := numberToken(w.mysql); ok && isCutoff(familyOfMySQL, t) {
			return true
		}
	}
	return state != 0 && isCutoff(familyOfState, state)
}

// chainFacts is what one walk over an error chain finds for factsOf.
type chainFacts struct {
	mysql   int32 // the first MySQL error number
	isMySQL bool
	state   string // the first SQLSTATE
	timeout bool   // a time-out anywhere
}

// visit notes one error of the chain; it never stops the walk.
func (f *chainFacts) visit(e error) bool {
	if f.state == "" {
		f.state, _ = errorState(e)
	}
	if !f.isMySQL {
		f.mysql, f.isMySQL = mysqlErrorNumber(e)
	}
	f.timeout = f.timeout || timedOutOne(e)
	return false
}

// IsTimeout reports whether err is a time limit that ran out: a network
// time-out (net.Error.Timeout), context.DeadlineExceeded, or a server's
// execution cut-off (MySQL 3024, MariaDB 1969, PostgreSQL SQLSTATE 57014).
func IsTimeout(err error) bool {
	return err != nil && factsOf(err, false).timeout
}

// timedOut reports context.DeadlineExceeded, ETIMEDOUT and net.Error time-outs.
func timedOut(err error) bool {
	// One walk, with type assertions: errors.As would allocate, and an
	// errors.Is per target walks the chain again.
	return walk(err, timedOutOne)
}

// timedOutOne is timedOut for one error of a chain.
func timedOutOne(e error) bool {
	if e == context.DeadlineExceeded || e == syscall.ETIMEDOUT {
		return true
	}
	if x, ok := e.(interface{ Is(error) bool }); ok && (x.Is(context.DeadlineExceeded) || x.Is(syscall.ETIMEDOUT)) {
		return true
	}
	ne, ok := e.(net.Error)
	return ok && ne.Timeout()
}

// IsBadConn reports whether err means that the connection broke:
// driver.ErrBadConn, sql.ErrConnDone, an unexpected end of stream, a reset,
// aborted or broken-pipe socket, or the MySQL driver's "invalid connection".
func IsBadConn(err error) bool {
	if err == nil {
		return false
	}
	// One walk over the chain instead of an errors.Is per sentinel: this
	// runs for every failed attempt.
	return walk(err, badConnOne)
}

// badConnOne is IsBadConn for one error of a chain.
func badConnOne(e error) bool {
	if isBadConnSentinel(e) {
		return true
	}
	if x, ok := e.(interface{ Is(error) bool }); ok {
		for _, target := range badConnSentinels {
			if x.Is(target) {
				return true
			}
		}
	}
	return e.Error() == "invalid connection"
}

// badConnSentinels are the errors that mean a broken connection.
var badConnSentinels = [...]error{driver.ErrBadConn, sql.ErrConnDone, io.EOF, io.ErrUnexpectedEOF,
	syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE, net.ErrClosed}

// isBadConnSentinel reports whether e is one of badConnSentinels. Their
// types are comparable, so comparing e with them cannot panic.
func isBadConnSentinel(e error) bool {
	if n, ok := e.(syscall.Errno); ok {
		return n == syscall.ECONNRESET || n == syscall.ECONNABORTED || n == syscall.EPIPE
	}
	switch e {
	case driver.ErrBadConn, sql.ErrConnDone, io.EOF, io.ErrUnexpectedEOF, net.ErrClosed:
		return true
	}
	return false
}
