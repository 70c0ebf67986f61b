package core_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/go-sql-driver/mysql"
	mssql "github.com/microsoft/go-mssqldb"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
)

var econnreset = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}

type pgLike struct{ state string }

func (e *pgLike) Error() string    { return "ERROR: deadlock detected (SQLSTATE " + e.state + ")" }
func (e *pgLike) SQLState() string { return e.state }

func TestErrorNumber(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		want int32
		ok   bool
	}{
		"mssql.Error":         {mssql.Error{Number: 1205, Class: 13, State: 51}, 1205, true},
		"wrapped mssql.Error": {fmt.Errorf("exec: %w", mssql.Error{Number: 40613}), 40613, true},
		"joined":              {errors.Join(errors.New("x"), mssql.Error{Number: 1222}), 1222, true},
		"mysql":               {&mysql.MySQLError{Number: 1213, Message: "Deadlock found"}, 1213, true},
		"wrapped mysql":       {fmt.Errorf("q: %w", &mysql.MySQLError{Number: 1205}), 1205, true},
		"ECONNRESET":          {econnreset, 10054, true},
		"ECONNABORTED":        {fmt.Errorf("w: %w", syscall.ECONNABORTED), 10053, true},
		"ECONNREFUSED":        {&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, 10061, true},
		"ETIMEDOUT":           {syscall.ETIMEDOUT, 10060, true},
		"plain":               {errors.New("boom"), 0, false},
		"nil":                 {nil, 0, false},
	} {
		got, ok := core.ErrorNumber(tc.err)
		assert.Equal(t, tc.want, got, "%s: ErrorNumber number", name)
		assert.Equal(t, tc.ok, ok, "%s: ErrorNumber ok", name)
	}
}

func TestConditionsAndStates(t *testing.T) {
	rules, err := core.ParseStatementRules("{40P01:1,0}")
	require.NoError(t, err)
	r, err := core.NewRetrier(core.Policy{Statement: rules}, core.Options{})
	require.NoError(t, err)
	runs := 0
	_ = r.Do(context.Background(), "select 1", func(context.Context) error { runs++; return fmt.Errorf("x: %w", &pgLike{"40P01"}) })
	assert.Equal(t, 2, runs, "runs of a wrapped SQLSTATE 40P01 under {40P01:1,0}")
	for _, err := range []error{driver.ErrBadConn, sql.ErrConnDone, io.ErrUnexpectedEOF, econnreset, mysql.ErrInvalidConn, fmt.Errorf("w: %w", syscall.EPIPE)} {
		assert.True(t, core.IsBadConn(err), "IsBadConn(%v)", err)
	}
	assert.False(t, core.IsBadConn(errors.New("syntax error")) || core.IsBadConn(nil), "IsBadConn too broad")
	for _, err := range []error{context.DeadlineExceeded, &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded},
		&mysql.MySQLError{Number: 1969}, &mysql.MySQLError{Number: 3024}, &pgLike{"57014"}} {
		assert.True(t, core.IsTimeout(err), "IsTimeout(%v)", err)
	}
	assert.False(t, core.IsTimeout(context.Canceled), "IsTimeout(Canceled)")
}

// The loop matches SQLSTATE tokens and named conditions.
func TestLoopMatchesStatesAndConditions(t *testing.T) {
	r, clock := newRetrier(t, core.Policy{Statement: mustRules(t, "{40P01:1,1};{badconn:2,100ms*2};{1213:1,3}")}, core.Options{})
	for _, tc := range []struct {
		err   error
		calls int
	}{
		{&pgLike{"40P01"}, 2},
		{driver.ErrBadConn, 3},
		{mysql.ErrInvalidConn, 3},
		{&mysql.MySQLError{Number: 1213}, 2},
		{&pgLike{"23505"}, 1},
	} {
		clock.Reset()
		calls := 0
		_ = r.Do(context.Background(), "select 1", failing(&calls, repeat(tc.err, 5)...))
		assert.Equal(t, tc.calls, calls, "%v: calls (waits %v)", tc.err, clock.Sleeps())
	}
}
