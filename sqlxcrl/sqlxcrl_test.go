package sqlxcrl_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mssql "github.com/microsoft/go-mssqldb"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

// open connects to the stand-in with the DSN parameters params and a
// virtual clock, so waits are recorded and instant.
func open(t testing.TB, srv *mssqltest.Server, params string, opts ...sqlxcrl.Option) (*sqlxcrl.DB, *coretest.Clock) {
	t.Helper()
	clock := coretest.NewClock(time.Time{})
	opts = append([]sqlxcrl.Option{config.WithClock(clock)}, opts...)
	db, err := sqlxcrl.Connect("sqlserver", srv.DSN()+params, opts...)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	clock.Reset()
	return db, clock
}

func mustNumber(t *testing.T, err error, want int32) {
	t.Helper()
	var me mssql.Error
	if !errors.As(err, &me) || me.Number != want {
		t.Fatalf("err = %v, want an mssql.Error %d", err, want)
	}
}

const update = "UPDATE accounts SET balance = balance - 10 WHERE id = 1"

func TestAttemptsAreCountPlusOne(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, clock := open(t, srv, "&retryExec={1205:3,2*2}")
	srv.Handle(update, mssqltest.Error(1205))
	_, err := db.ExecContext(context.Background(), update)
	if srv.Count(update) != 4 {
		t.Errorf("attempts = %d, want 4", srv.Count(update))
	}
	if !slices.Equal(clock.Sleeps(), coretest.Seconds(2, 4, 8)) {
		t.Errorf("waits %v", clock.Sleeps())
	}
	if !errors.Is(err, core.ErrRetriesExhausted) || !strings.Contains(err.Error(), "4 attempts") {
		t.Errorf("err = %v", err)
	}
	mustNumber(t, err, 1205)
}

func TestFilterMismatchReturnsTheError(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={1205:3,1:select,update}")
	const del = "DELETE FROM accounts WHERE id = 1"
	srv.Handle(del, mssqltest.Error(1205))
	_, err := db.Exec(del)
	mustNumber(t, err, 1205)
	var me mssql.Error
	if errors.As(err, &me); errors.Is(err, core.ErrRetriesExhausted) {
		t.Errorf("a filter mismatch must return the driver error itself: %v", err)
	}
	if srv.Count(del) != 1 {
		t.Errorf("attempts = %d, want 1", srv.Count(del))
	}
}

func TestQueryTimeoutBoundsEachAttempt(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={timeout:1,0%2B0}", config.WithQueryTimeout(100*time.Millisecond))
	const slow = "SELECT * FROM big"
	srv.Handle(slow, mssqltest.Hang())
	start := time.Now()
	var n []int64
	err := db.Select(&n, slow)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, core.ErrRetriesExhausted) {
		t.Errorf("err = %v", err)
	}
	if srv.Count(slow) != 2 {
		t.Errorf("attempts = %d, want 2", srv.Count(slow))
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
}

func TestEveryStatementMethodRetries(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={1205:1,0}&retryBudget=off") // one handle, many failures: not a budget test
	type account struct {
		ID      int64  `db:"id"`
		Owner   string `db:"owner"`
		Balance int64  `db:"balance"`
	}
	rows := mssqltest.Rows([]string{"id", "owner", "balance"}, []any{int64(1), "ada", int64(100)})
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		query string
		reply mssqltest.Reply
		run   func(q string) error
	}{
		{"Exec", "UPDATE a SET x = 1", mssqltest.Affected(1), func(q string) error { _, err := db.Exec(q); return err }},
		{"ExecContext args", "UPDATE a SET x = @p1", mssqltest.Affected(1), func(q string) error { _, err := db.ExecContext(ctx, q, 5); return err }},
		{"MustExec", "UPDATE b SET x = 1", mssqltest.Affected(1), func(q string) error { db.MustExec(q); return nil }},
		{"Query", "SELECT id, owner, balance FROM q1", rows, func(q string) error {
			r, err := db.Query(q)
			if err == nil {
				r.Close()
			}
			return err
		}},
		{"Queryx", "SELECT id, owner, balance FROM q2", rows, func(q string) error {
			r, err := db.Queryx(q)
			if err == nil {
				r.Close()
			}
			return err
		}},
		{"QueryRow", "SELECT id, owner, balance FROM q3", rows, func(q string) error {
			var a account
			return db.QueryRow(q).Scan(&a.ID, &a.Owner, &a.Balance)
		}},
		{"QueryRowx", "SELECT id, owner, balance FROM q4", rows, func(q string) error {
			var a account
			return db.QueryRowx(q).StructScan(&a)
		}},
		{"Get", "SELECT id, owner, balance FROM q5 WHERE id = @p1", rows, func(q string) error {
			var a account
			if err := db.Get(&a, q, 1); err != nil {
				return err
			}
			if a.Owner != "ada" || a.Balance != 100 {
				t.Errorf("Get scanned %+v", a)
			}
			return nil
		}},
		{"Select", "SELECT id, owner, balance FROM q6", rows, func(q string) error {
			var as []account
			if err := db.Select(&as, q); err != nil {
				return err
			}
			if len(as) != 1 {
				t.Errorf("Select scanned %+v (a retry must not duplicate rows)", as)
			}
			return nil
		}},
		{"NamedExec", "UPDATE n SET owner = @p1", mssqltest.Affected(1), func(string) error {
			_, err := db.NamedExec("UPDATE n SET owner = :owner", map[string]any{"owner": "ada"})
			return err
		}},
		{"NamedQuery", "SELECT id, owner, balance FROM nq WHERE owner = @p1", rows, func(string) error {
			r, err := db.NamedQuery("SELECT id, owner, balance FROM nq WHERE owner = :owner", map[string]any{"owner": "ada"})
			if err == nil {
				r.Close()
			}
			return err
		}},
		{"Preparex Exec", "UPDATE p SET x = @p1", mssqltest.Affected(1), func(q string) error {
			s, err := db.Preparex(q)
			if err != nil {
				return err
			}
			defer s.Close()
			_, err = s.Exec(1)
			return err
		}},
		{"Preparex Get", "SELECT id, owner, balance FROM pg WHERE id = @p1", rows, func(q string) error {
			s, err := db.Preparex(q)
			if err != nil {
				return err
			}
			defer s.Close()
			var a account
			return s.Get(&a, 1)
		}},
		{"PrepareNamed Exec", "UPDATE pn SET owner = @p1", mssqltest.Affected(1), func(string) error {
			s, err := db.PrepareNamed("UPDATE pn SET owner = :owner")
			if err != nil {
				return err
			}
			defer s.Close()
			_, err = s.Exec(map[string]any{"owner": "ada"})
			return err
		}},
		{"PrepareNamed Select", "SELECT id, owner, balance FROM pns WHERE owner = @p1", rows, func(string) error {
			s, err := db.PrepareNamed("SELECT id, owner, balance FROM pns WHERE owner = :owner")
			if err != nil {
				return err
			}
			defer s.Close()
			var as []account
			err = s.Select(&as, map[string]any{"owner": "ada"})
			if err == nil && len(as) != 1 {
				t.Errorf("Select scanned %+v", as)
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.Handle(tc.query, mssqltest.Error(1205), tc.reply)
			if err := tc.run(tc.query); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if got := srv.Count(tc.query); got != 2 {
				t.Errorf("%s: %d executions of %q, want 2 (statements: %q)", tc.name, got, tc.query, srv.Statements())
			}
		})
	}
}

func TestGetNoRowsUnchanged(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={1205:1,0}")
	var n int64
	if err := db.Get(&n, "SELECT id FROM empty"); err != sql.ErrNoRows {
		t.Errorf("err = %v, want sql.ErrNoRows itself", err)
	}
}

func TestNoPerStatementRetryInTransaction(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={1205:3,0}")
	srv.Handle(update, mssqltest.Error(1205))
	tx, err := db.Beginx()
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(update)
	mustNumber(t, err, 1205)
	if srv.Count(update) != 1 {
		t.Errorf("a statement in a transaction ran %d times", srv.Count(update))
	}
	if tx.FailedQuery() != update {
		t.Errorf("FailedQuery = %q", tx.FailedQuery())
	}
	_ = tx.Rollback()
	if len(srv.Committed()) != 0 {
		t.Errorf("committed %v", srv.Committed())
	}
}

func TestRunInTxRetriesTheWholeClosure(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, clock := open(t, srv, "&retryExec={1205:2,1:insert,update}")
	const debit = "UPDATE accounts SET balance = balance - 10 WHERE id = 1"
	const credit = "INSERT INTO ledger (account, amount) VALUES (2, 10)"
	srv.Handle(debit, mssqltest.Affected(1))
	srv.Handle(credit, mssqltest.Error(1205), mssqltest.Affected(1))
	runs := 0
	err := db.RunInTx(context.Background(), nil, func(tx *sqlxcrl.Tx) error {
		runs++
		if _, err := tx.Exec(debit); err != nil {
			return err
		}
		_, err := tx.Exec(credit)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if runs != 2 || !slices.Equal(clock.Sleeps(), coretest.Seconds(1)) {
		t.Errorf("runs %d waits %v", runs, clock.Sleeps())
	}
	committed := srv.Committed()
	if len(committed) != 1 || !slices.Equal(committed[0], []string{debit, credit}) {
		t.Errorf("committed = %q, want exactly one transaction with both statements", committed)
	}
	if rb := srv.RolledBack(); len(rb) != 1 {
		t.Errorf("rolled back = %q, want the deadlocked attempt", rb)
	}
}

func TestRunInTxFilterAgainstFailedStatement(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={1205:2,1:insert}")
	const del = "DELETE FROM ledger WHERE id = 1"
	srv.Handle(del, mssqltest.Error(1205))
	runs := 0
	err := db.RunInTx(context.Background(), nil, func(tx *sqlxcrl.Tx) error {
		runs++
		_, err := tx.Exec(del)
		return err
	})
	mustNumber(t, err, 1205)
	if runs != 1 {
		t.Errorf("runs = %d, want 1 (the failed statement is a delete)", runs)
	}
}

func TestRunInTxCommitOutcomeUnknown(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={1205:2,1;badconn:2,1}")
	srv.Handle("COMMIT TRANSACTION", mssqltest.Drop())
	runs := 0
	err := db.RunInTx(context.Background(), nil, func(tx *sqlxcrl.Tx) error {
		runs++
		_, err := tx.Exec("INSERT INTO ledger (amount) VALUES (10)")
		return err
	})
	if !errors.Is(err, core.ErrCommitUnknown) {
		t.Fatalf("err = %v, want ErrCommitUnknown", err)
	}
	if runs != 1 {
		t.Errorf("runs = %d: a commit of unknown outcome must not be retried", runs)
	}
}

func TestRunInTxPanicRollsBack(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={1205:2,1}")
	defer func() {
		if p := recover(); p != "boom" {
			t.Errorf("recovered %v, want the closure's panic", p)
		}
		if len(srv.Committed()) != 0 || srv.Rollbacks() != 1 {
			t.Errorf("committed %v, rollbacks %d", srv.Committed(), srv.Rollbacks())
		}
	}()
	_ = db.RunInTx(context.Background(), nil, func(tx *sqlxcrl.Tx) error {
		tx.MustExec("INSERT INTO ledger (amount) VALUES (10)")
		panic("boom")
	})
}

func TestConnectionLoop(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params string
		fail   int32
		times  int
		ok     bool
		logins int
		waits  []time.Duration
	}{
		{"first retry immediate", "", 40613, 1, true, 2, []time.Duration{0}},
		{"interval after", "&connectRetryCount=3&connectRetryInterval=5", 40613, 2, true, 3, coretest.Seconds(0, 5)},
		{"loginTimeout early stop", "&connectRetryCount=5&connectRetryInterval=2&loginTimeout=3", 40613, 10, false, 3, coretest.Seconds(0, 2)},
		{"connectRetryCount=0", "&connectRetryCount=0", 40613, 1, false, 1, nil},
		{"not transient", "&connectRetryCount=3", 18456, 1, false, 1, nil},
		{"append", "&retryConn={%2B18456}&connectRetryCount=2", 18456, 2, true, 3, coretest.Seconds(0, 10)},
		{"append keeps builtin", "&retryConn={%2B18456}", 40613, 1, true, 2, []time.Duration{0}},
		// The login loop retries every error that is not fatal, whatever
		// retryConn says; the replaced list stops the connection loop.
		{"replace", "&retryConn={18456}", 40613, 3, false, 2, []time.Duration{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mssqltest.NewServer(t)
			srv.FailLogin(tc.fail, tc.times)
			clock := coretest.NewClock(time.Time{})
			db, err := sqlxcrl.Connect("sqlserver", srv.DSN()+tc.params, config.WithClock(clock))
			if tc.ok != (err == nil) {
				t.Fatalf("Connect err = %v, want ok=%v", err, tc.ok)
			}
			if err == nil {
				db.Close()
			} else {
				mustNumber(t, err, tc.fail)
			}
			if srv.Logins() != tc.logins || !slices.Equal(clock.Sleeps(), tc.waits) {
				t.Errorf("logins %d waits %v, want %d %v", srv.Logins(), clock.Sleeps(), tc.logins, tc.waits)
			}
		})
	}
}

// Every new pooled connection runs the connection loop, not only the first.
func TestConnectionLoopForEveryPooledConnection(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "")
	db.SetMaxIdleConns(0) // every statement opens a new connection
	before := srv.Logins()
	srv.FailLogin(40613, 1)
	if _, err := db.Exec(update); err != nil {
		t.Fatalf("Exec on a new connection whose first login failed: %v", err)
	}
	if srv.Logins()-before != 2 {
		t.Errorf("logins = %d, want 2", srv.Logins()-before)
	}
}

func TestTwoDBsAreIsolated(t *testing.T) {
	srv := mssqltest.NewServer(t)
	a, _ := open(t, srv, "&retryExec={1205:2,0}")
	b, _ := open(t, srv, "&retryExec={1222:2,0}")
	srv.Handle("UPDATE a SET x = 1", mssqltest.Error(1205))
	_, errA := a.Exec("UPDATE a SET x = 1")
	_, errB := b.Exec("UPDATE a SET x = 1")
	if !errors.Is(errA, core.ErrRetriesExhausted) || errors.Is(errB, core.ErrRetriesExhausted) {
		t.Errorf("a: %v; b: %v", errA, errB)
	}
	if srv.Count("UPDATE a SET x = 1") != 3+1 {
		t.Errorf("count = %d, want 3 for a and 1 for b", srv.Count("UPDATE a SET x = 1"))
	}
}

func TestConcurrentStatements(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={1205:1,0}&retryBudget=off") // 16 deadlocks at once would be a storm to the budget
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := "UPDATE c SET x = " + string(rune('a'+i))
			srv.Handle(q, mssqltest.Error(1205), mssqltest.Affected(1))
			if _, err := db.Exec(q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}()
	}
	wg.Wait()
}

func TestBadSettings(t *testing.T) {
	srv := mssqltest.NewServer(t)
	for _, params := range []string{"&retryExec={1205:3,2AND2}", "&connectRetryCount=300", "&loginTimeout=abc"} {
		if _, err := sqlxcrl.Open("sqlserver", srv.DSN()+params); err == nil {
			t.Errorf("Open accepted %s", params)
		}
	}
	// NewDb cannot return the error: every statement reports it instead.
	raw, err := sql.Open("sqlserver", srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	db := sqlxcrl.NewDb(raw, "sqlserver", sqlxcrl.WithRetryExec("{1205:3,2AND2}"))
	if _, err := db.Exec(update); err == nil || !strings.Contains(err.Error(), "2AND2") {
		t.Errorf("Exec on a misconfigured DB: %v", err)
	}
	var n int64
	if err := db.QueryRowx("select 1").Scan(&n); err == nil || !strings.Contains(err.Error(), "2AND2") {
		t.Errorf("QueryRowx on a misconfigured DB: %v", err)
	}
}

func TestNewDbRetriesStatements(t *testing.T) {
	srv := mssqltest.NewServer(t)
	raw, err := sql.Open("sqlserver", srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	db := sqlxcrl.NewDb(raw, "sqlserver", sqlxcrl.WithRetryExec("{1205:1,0}"))
	srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
	if _, err := db.Exec(update); err != nil || srv.Count(update) != 2 {
		t.Errorf("err %v count %d", err, srv.Count(update))
	}
}

// sqlxHandle is sqlxcrl's side of the conformance suite.
type sqlxHandle struct{ db *sqlxcrl.DB }

func (h sqlxHandle) Exec(ctx context.Context, query string) error {
	_, err := h.db.ExecContext(ctx, query)
	return err
}

func (h sqlxHandle) InTx(ctx context.Context, fn func(exec func(string) error) error) error {
	return h.db.RunInTx(ctx, nil, func(tx *sqlxcrl.Tx) error {
		return fn(func(q string) error { _, err := tx.ExecContext(ctx, q); return err })
	})
}

func (h sqlxHandle) Close() error { return h.db.Close() }

func TestConformance(t *testing.T) {
	coretest.Conformance(t, func(t *testing.T, dsn string, clock core.Clock) (coretest.Handle, error) {
		db, err := sqlxcrl.Connect("sqlserver", dsn, config.WithClock(clock))
		if err != nil {
			return nil, err
		}
		return sqlxHandle{db}, nil
	})
}
