package coretest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/mssqltest"
)

// Handle is what an adapter gives the conformance suite: one database
// handle, opened by the adapter on the SQL Server stand-in.
type Handle interface {
	// Exec runs a statement outside any transaction, under the statement loop.
	Exec(ctx context.Context, query string) error
	// InTx runs fn in a transaction under the adapter's whole-transaction
	// retry; exec runs a statement inside that transaction.
	InTx(ctx context.Context, fn func(exec func(query string) error) error) error
	// Close closes the handle.
	Close() error
}

// Open opens a Handle on dsn (a sqlserver:// URL with the retry settings
// as query parameters) with clock as the retry engine's clock. It connects
// (and so runs the connection loop) before it returns.
type Open func(t *testing.T, dsn string, clock core.Clock) (Handle, error)

// Conformance runs the semantics every adapter must show, with the real
// go-mssqldb driver (which the adapter's Open must use) against mssqltest:
// the waits are the rule's schedule, attempts are count+1, a filter
// mismatch returns the driver error unchanged, queryTimeout refuses longer
// waits, the context deadline is checked before a wait, the connection
// loop's first retry is immediate, a batch or a procedure call is not
// retried on its own, a statement inside a transaction is not retried on
// its own, a whole transaction is retried with exactly one committed
// write, and its rule's filter sees the statement whose error ended it. Each adapter's tests call it.
func Conformance(t *testing.T, open Open) {
	const update = "UPDATE accounts SET balance = balance - 10 WHERE id = 1"
	ctx := context.Background()
	start := func(t *testing.T, params string) (*mssqltest.Server, Handle, *Clock) {
		t.Helper()
		srv := mssqltest.NewServer(t)
		clock := NewClock(time.Time{})
		h, err := open(t, srv.DSN()+params, clock)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		t.Cleanup(func() { _ = h.Close() })
		clock.Reset()
		return srv, h, clock
	}
	number := func(t *testing.T, err error, want int32) {
		t.Helper()
		if n, ok := core.ErrorNumber(err); !ok || n != want {
			t.Fatalf("err = %v, want a driver error %d", err, want)
		}
	}

	t.Run("waits are the schedule", func(t *testing.T) {
		srv, h, clock := start(t, "&retryExec={1205,1222:3,2*2:select,update}")
		srv.Handle(update, mssqltest.Error(1205), mssqltest.Error(1222), mssqltest.Affected(1))
		if err := h.Exec(ctx, update); err != nil {
			t.Fatal(err)
		}
		if srv.Count(update) != 3 || !slices.Equal(clock.Sleeps(), Seconds(2, 4)) {
			t.Errorf("executions %d, waits %v; want 3, [2s 4s]", srv.Count(update), clock.Sleeps())
		}
	})
	t.Run("attempts are count+1", func(t *testing.T) {
		srv, h, clock := start(t, "&retryExec={1205:3,2*2}")
		srv.Handle(update, mssqltest.Error(1205))
		err := h.Exec(ctx, update)
		number(t, err, 1205)
		if !errors.Is(err, core.ErrRetriesExhausted) || !strings.Contains(err.Error(), "4 attempts") {
			t.Errorf("err = %v, want ErrRetriesExhausted after 4 attempts", err)
		}
		if srv.Count(update) != 4 || !slices.Equal(clock.Sleeps(), Seconds(2, 4, 8)) {
			t.Errorf("executions %d, waits %v; want 4, [2s 4s 8s]", srv.Count(update), clock.Sleeps())
		}
	})
	t.Run("filter mismatch returns the error", func(t *testing.T) {
		const del = "DELETE FROM accounts WHERE id = 1"
		srv, h, _ := start(t, "&retryExec={1205:3,1:select,update}")
		srv.Handle(del, mssqltest.Error(1205))
		err := h.Exec(ctx, del)
		number(t, err, 1205)
		var re *core.RetryError
		if errors.As(err, &re) || srv.Count(del) != 1 {
			t.Errorf("err = %v after %d executions, want the driver error after 1", err, srv.Count(del))
		}
	})
	t.Run("queryTimeout refuses longer waits", func(t *testing.T) {
		srv, h, clock := start(t, "&retryExec={1205:4,2%2B2}&queryTimeout=3")
		srv.Handle(update, mssqltest.Error(1205))
		err := h.Exec(ctx, update)
		number(t, err, 1205)
		if !errors.Is(err, core.ErrInvalidRetryInterval) || srv.Count(update) != 2 || !slices.Equal(clock.Sleeps(), Seconds(2)) {
			t.Errorf("err = %v, executions %d, waits %v", err, srv.Count(update), clock.Sleeps())
		}
	})
	t.Run("deadline checked before the wait", func(t *testing.T) {
		srv, h, clock := start(t, "&retryExec={1205:3,2*2}")
		srv.Handle(update, mssqltest.Error(1205))
		dctx, cancel := context.WithDeadline(ctx, clock.Now().Add(3*time.Second))
		defer cancel()
		err := h.Exec(dctx, update)
		number(t, err, 1205)
		if !errors.Is(err, core.ErrDeadline) || srv.Count(update) != 2 {
			t.Errorf("err = %v after %d executions", err, srv.Count(update))
		}
	})
	t.Run("connection loop: first retry immediate", func(t *testing.T) {
		srv := mssqltest.NewServer(t)
		srv.FailLogin(40613, 1)
		clock := NewClock(time.Time{})
		h, err := open(t, srv.DSN(), clock)
		if err != nil {
			t.Fatalf("open after one failed login: %v", err)
		}
		defer h.Close()
		if srv.Logins() != 2 || !slices.Equal(clock.Sleeps(), []time.Duration{0}) {
			t.Errorf("logins %d, waits %v; want 2, [0]", srv.Logins(), clock.Sleeps())
		}
	})
	t.Run("a batch or a procedure call is not retried alone", func(t *testing.T) {
		const batch = "UPDATE a SET n = n + 1; UPDATE b SET n = n + 1"
		const proc = "EXEC dbo.Transfer 1, 2"
		const reads = "SET NOCOUNT ON; SELECT n FROM a"
		srv, h, _ := start(t, "&retryExec={1205:2,0}")
		srv.Handle(batch, mssqltest.Error(1205), mssqltest.Affected(1))
		srv.Handle(proc, mssqltest.Error(1205), mssqltest.Affected(1))
		srv.Handle(reads, mssqltest.Error(1205), mssqltest.Affected(0))
		for _, q := range []string{batch, proc} {
			err := h.Exec(ctx, q)
			number(t, err, 1205)
			if !errors.Is(err, core.ErrBatchNotRetried) || !strings.Contains(err.Error(), "RunInTx") || srv.Count(q) != 1 {
				t.Errorf("%q: err = %v after %d executions, want ErrBatchNotRetried after 1", q, err, srv.Count(q))
			}
		}
		if err := h.Exec(ctx, reads); err != nil || srv.Count(reads) != 2 {
			t.Errorf("%q: err = %v after %d executions, want a retry", reads, err, srv.Count(reads))
		}
		// A rule whose filter names exec retries the call.
		srv2, h2, _ := start(t, "&retryExec={1205:2,0:exec}")
		srv2.Handle(proc, mssqltest.Error(1205), mssqltest.Affected(1))
		if err := h2.Exec(ctx, proc); err != nil || srv2.Count(proc) != 2 {
			t.Errorf("%q with {1205:2,0:exec}: err = %v after %d executions, want a retry", proc, err, srv2.Count(proc))
		}
	})
	t.Run("the filter sees the statement whose error ended the transaction", func(t *testing.T) {
		// The closure meets a duplicate key on its INSERT, handles it, and
		// goes on; its UPDATE is then a deadlock victim, which ends the
		// transaction. The rule's filter names update: the transaction is
		// retried. (Recording the first failure instead saw the INSERT.)
		const insert = "INSERT INTO ledger (account, amount) VALUES (1, 10)"
		srv, h, _ := start(t, "&retryExec={1205,2627:2,0:update}")
		srv.Handle(insert, mssqltest.Error(2627))
		srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
		runs := 0
		err := h.InTx(ctx, func(exec func(string) error) error {
			runs++
			_ = exec(insert) // already there: fine
			return exec(update)
		})
		if err != nil || runs != 2 {
			t.Errorf("err = %v after %d runs, want success after 2", err, runs)
		}
	})
	t.Run("no statement retry inside a transaction; whole transaction retried", func(t *testing.T) {
		const insert = "INSERT INTO ledger (account, amount) VALUES (1, 10)"
		srv, h, clock := start(t, "&retryExec={1205:2,1:insert,update}")
		srv.Handle(insert, mssqltest.Error(1205), mssqltest.Affected(1))
		runs := 0
		err := h.InTx(ctx, func(exec func(string) error) error {
			runs++
			if err := exec(update); err != nil {
				return err
			}
			return exec(insert)
		})
		if err != nil {
			t.Fatal(err)
		}
		if runs != 2 || srv.Count(insert) != 2 || !slices.Equal(clock.Sleeps(), Seconds(1)) {
			t.Errorf("runs %d, executions %d, waits %v; want 2, 2, [1s]", runs, srv.Count(insert), clock.Sleeps())
		}
		committed := srv.Committed()
		if len(committed) != 1 || !slices.Equal(committed[0], []string{update, insert}) || len(srv.RolledBack()) != 1 {
			t.Errorf("committed %q, rolled back %q; want one of each", committed, srv.RolledBack())
		}
	})
}
