package core_test

import (
	"context"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/tables/family"
)

// driverError returns the driver's own error value for the error token
// tok of family f: go-mssqldb's mssql.Error, go-sql-driver/mysql's
// *MySQLError, pgx's *PgError.
func driverError(t *testing.T, f family.Family, tok string) error {
	t.Helper()
	switch f.Profile().Errors {
	case family.NumberedErrors:
		n := mustNumber(t, tok)
		return mssql.Error{Number: int32(n), Class: 16, Message: "scripted"}
	case family.MySQLErrors:
		return &mysql.MySQLError{Number: uint16(mustNumber(t, tok)), Message: "scripted"}
	default:
		return &pgconn.PgError{Severity: "ERROR", Code: tok, Message: "scripted"}
	}
}

func mustNumber(t *testing.T, tok string) int {
	t.Helper()
	n := 0
	for _, c := range tok {
		require.True(t, c >= '0' && c <= '9', "%q is no number", tok)
		n = n*10 + int(c-'0')
	}
	return n
}

// Each class token, on each family, retries every error of the class
// (the driver's own error value), and crl explain's numbers (Rule.Errors)
// are those the loop retries.
func TestClassTokensRetryEveryErrorOfTheClass(t *testing.T) {
	for _, class := range []string{"deadlock", "serialization", "lockTimeout", "failover", "throttle", "timeout"} {
		rules := mustRules(t, "{"+class+":1,0}")
		require.Equal(t, 1, rules.Len())
		rule := rules.Rules()[0]
		assert.Equal(t, class, rule.Token())
		for _, f := range family.All() {
			toks := rule.Errors(f.Driver())
			if class != "timeout" {
				assert.NotEmpty(t, toks, "%s on %s", class, f)
			}
			for _, tok := range toks {
				r, _ := newRetrier(t, core.Policy{Statement: rules}, core.Options{})
				calls := 0
				err := r.Do(context.Background(), "UPDATE t SET a = 1", failing(&calls, driverError(t, f, tok)))
				assert.NoError(t, err, "%s %s on %s", class, tok, f)
				assert.Equal(t, 2, calls, "%s %s on %s: retried once", class, tok, f)
				got, ok := rules.LookupError(driverError(t, f, tok))
				assert.True(t, ok && got.Token() == class, "LookupError: %s %s on %s", class, tok, f)
			}
		}
	}
}

// A number means what its family says: 1205 is a deadlock victim from
// go-mssqldb and a lock-wait time-out from go-sql-driver/mysql.
func TestClassesArePerFamily(t *testing.T) {
	rules := mustRules(t, "{deadlock:1,0}")
	for _, tc := range []struct {
		err   error
		retry bool
	}{
		{mssql.Error{Number: 1205}, true},
		{&mysql.MySQLError{Number: 1205}, false},
		{&mysql.MySQLError{Number: 1213}, true},
		{mssql.Error{Number: 1213}, false},
		{&pgconn.PgError{Code: "40P01"}, true},
		{&pgconn.PgError{Code: "40001"}, false},
	} {
		_, ok := rules.LookupError(tc.err)
		assert.Equal(t, tc.retry, ok, "%v", tc.err)
	}
	r, ok := rules.Lookup(1205)
	assert.True(t, ok, "Lookup reads a number as SQL Server's")
	assert.Equal(t, "deadlock", r.Token())
	_, ok = rules.Lookup(1213)
	assert.False(t, ok)
}

// A number or SQLSTATE named in a rule wins over a class that holds it,
// wherever it stands.
func TestNumberWinsOverClass(t *testing.T) {
	for _, value := range []string{"{1205:5,1};{deadlock:1,0}", "{deadlock:1,0};{1205:5,1}"} {
		rules := mustRules(t, value)
		r, ok := rules.LookupError(mssql.Error{Number: 1205})
		require.True(t, ok, value)
		assert.Equal(t, 5, r.Count(), value)
		assert.Equal(t, []string{"1205"}, r.Errors("sqlserver"))
	}
}

// Class words are read in any case and printed as the docs write them;
// retryConn takes the classes a login can fail with.
func TestClassWords(t *testing.T) {
	rules := mustRules(t, "{DEADLOCK, Serialization, locktimeout:3,100ms*2}")
	assert.Equal(t, "{deadlock:3,100ms*2};{serialization:3,100ms*2};{lockTimeout:3,100ms*2}", rules.String())
	assert.Empty(t, mustRules(t, "{badconn:1,0}").Rules()[0].Errors("mysql"), "a broken connection has no number")
	assert.Equal(t, []string{"1969", "3024"}, mustRules(t, "{timeout:1,0}").Rules()[0].Errors("mariadb"))

	conn, err := core.ParseConnectionRules("{+failover,throttle}")
	require.NoError(t, err)
	assert.True(t, conn.Retryable(40613), "failover holds 40613")
	assert.True(t, conn.Retryable(40501))
	assert.False(t, conn.Retryable(1205))
	_, err = core.ParseConnectionRules("{+deadlock}")
	require.ErrorIs(t, err, core.ErrInvalidParameterNumber)
	assert.Contains(t, err.Error(), `"deadlock" is a class of statement errors`)
	assert.Contains(t, err.Error(), "failover, throttle, badconn, timeout")
}
