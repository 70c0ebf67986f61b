package core

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type numberedErr int32

func (e numberedErr) Error() string         { return fmt.Sprintf("error %d", int32(e)) }
func (e numberedErr) SQLErrorNumber() int32 { return int32(e) }

type statedErr string

func (e statedErr) Error() string    { return "state " + string(e) }
func (e statedErr) SQLState() string { return string(e) }

// classify walks the chain once; it must say what the functions that each
// walk it for one thing say.
func TestClassifyAgreesWithTheSingleChecks(t *testing.T) {
	for _, err := range []error{
		numberedErr(1205),
		fmt.Errorf("exec: %w", numberedErr(1222)),
		&mysql.MySQLError{Number: 3024},
		fmt.Errorf("q: %w", &mysql.MySQLError{Number: 1213}),
		statedErr("40P01"),
		statedErr("57014"),
		errors.Join(statedErr("40001"), context.DeadlineExceeded),
		fmt.Errorf("read: %w", io.ErrUnexpectedEOF),
		&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)},
		&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)},
		driver.ErrBadConn,
		errors.New("invalid connection"),
		errors.Join(numberedErr(40613), &mysql.MySQLError{Number: 1969}, statedErr("08006")),
	} {
		c := factsOf(err, false)
		my, isMySQL := mysqlNumber(err)
		st, hasState := sqlState(err)
		n, hasNumber := ErrorNumber(err)
		assert.Equal(t, hasNumber, c.hasNumber, "%v: has a number", err)
		assert.Equal(t, n, c.number, "%v: number", err)
		if tok, ok := stateToken(st); hasState && ok && tok != token(c.number) {
			assert.Equal(t, tok, c.state, "%v: SQLSTATE", err)
		}
		assert.Equal(t, IsTimeout(err), c.timeout, "%v: timeout", err)
		assert.Equal(t, isMySQL && (my == 3024 || my == 1969) || timedOut(err) || st == "57014", c.timeout, "%v: timeout parts", err)
		assert.Equal(t, IsBadConn(err), c.badConn(), "%v: badconn", err)
		assert.True(t, factsOf(err, true).timeout, "%v: the attempt's own time-out", err)
	}
}

// Policy.Decide is the statement loop's decision: every reason it can give.
func TestDecide(t *testing.T) {
	rules, err := ParseStatementRules("{1205:2,1*2:select,update};{1222:0};{40613:1,5}")
	require.NoError(t, err)
	p := &Policy{Statement: rules}
	for _, tc := range []struct {
		name    string
		query   string
		attempt int
		err     error
		reason  error
		wait    time.Duration
	}{
		{"first retry", "UPDATE t SET n = 1", 1, numberedErr(1205), nil, time.Second},
		{"second retry", "update t set n = 1", 2, numberedErr(1205), nil, 2 * time.Second},
		{"used up", "update t set n = 1", 3, numberedErr(1205), ErrRetriesExhausted, 0},
		{"filter", "DELETE FROM t", 1, numberedErr(1205), ErrNotRetryable, 0},
		{"count 0", "select 1", 1, numberedErr(1222), ErrNotRetryable, 0},
		{"no rule", "select 1", 1, numberedErr(2627), ErrNotRetryable, 0},
		{"batch", "update a set n = 1; update b set n = 2", 1, numberedErr(1205), ErrBatchNotRetried, 0},
		{"read batch", "select 1; select 2", 1, numberedErr(1205), nil, time.Second},
		{"procedure", "EXEC dbo.Transfer", 1, numberedErr(40613), ErrBatchNotRetried, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wait, giveUp := p.Decide(tc.query, tc.attempt, tc.err)
			assert.Equal(t, tc.reason, giveUp)
			if tc.reason == nil {
				assert.Equal(t, tc.wait, wait)
			}
		})
	}
	qt := &Policy{Statement: rules, QueryTimeout: 1500 * time.Millisecond}
	_, giveUp := qt.Decide("update t", 2, numberedErr(1205))
	assert.Equal(t, ErrInvalidRetryInterval, giveUp)
	d := qt.decide(KindStatement, "update t", 2, numberedErr(1205), false)
	assert.Equal(t, "wait 2s > queryTimeout 1.5s", d.Detail)
	a := testing.AllocsPerRun(100, func() { _, _ = p.Decide("/* x */ update t", 1, numberedErr(1205)) })
	assert.Zero(t, a, "allocations of a retry decision")
}

// batchRefusal skips the scan for texts without ';' under a rule with a
// filter: it must answer what the full scan answers.
func FuzzNotAloneAgreesWithTheScan(f *testing.F) {
	for _, s := range []string{"update a set n = 1; update b set n = 2", "EXEC p", "dbo.p", "select 1", "'a;b'", "/* ; */ exec p", ""} {
		f.Add(s)
	}
	filtered := Rule{filter: []string{"exec", "update"}}
	plain := Rule{}
	f.Fuzz(func(t *testing.T, q string) {
		for _, r := range []*Rule{&filtered, &plain} {
			require.Equal(t, batchRisk(q, r), batchRefusal(q, r), "%q under %v: batchRefusal (expected: the scan's)", q, r.filter)
		}
	})
}
