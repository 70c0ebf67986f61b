package sqlxcrl_test

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"testing"
	"time"

	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	// Replay off: these tests read sqlxcrl's own helpers (the driver
	// layer's replay has tests of its own; opts may turn it on).
	opts = append([]sqlxcrl.Option{config.WithClock(clock), config.WithTxReplay(false)}, opts...)
	db, err := sqlxcrl.Connect("sqlserver", srv.DSN()+params, opts...)
	require.NoError(t, err, "Connect")
	t.Cleanup(func() { db.Close() })
	clock.Reset()
	return db, clock
}

func mustNumber(t *testing.T, err error, want int32) {
	t.Helper()
	var me mssql.Error
	require.ErrorAs(t, err, &me, "want an mssql.Error %d", want)
	require.Equal(t, want, me.Number, "the mssql.Error's number")
}

const update = "UPDATE accounts SET balance = balance - 10 WHERE id = 1"

func TestAttemptsAreCountPlusOne(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, clock := open(t, srv, "&retryExec={1205:3,2*2}")
	srv.Handle(update, mssqltest.Error(1205))
	_, err := db.ExecContext(context.Background(), update)
	assert.Equal(t, 4, srv.Count(update), "attempts")
	assert.Equal(t, coretest.Seconds(2, 4, 8), clock.Sleeps(), "waits")
	assert.ErrorIs(t, err, core.ErrRetriesExhausted)
	assert.ErrorContains(t, err, "4 attempts")
	mustNumber(t, err, 1205)
}

func TestFilterMismatchReturnsTheError(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={1205:3,1:select,update}")
	const del = "DELETE FROM accounts WHERE id = 1"
	srv.Handle(del, mssqltest.Error(1205))
	_, err := db.Exec(del)
	mustNumber(t, err, 1205)
	assert.NotErrorIs(t, err, core.ErrRetriesExhausted, "a filter mismatch must return the driver error itself")
	assert.Equal(t, 1, srv.Count(del), "attempts")
}

func TestQueryTimeoutBoundsEachAttempt(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={timeout:1,0%2B0}", config.WithQueryTimeout(100*time.Millisecond))
	const slow = "SELECT * FROM big"
	srv.Handle(slow, mssqltest.Hang())
	start := time.Now()
	var n []int64
	err := db.Select(&n, slow)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, core.ErrRetriesExhausted)
	assert.Equal(t, 2, srv.Count(slow), "attempts")
	assert.LessOrEqual(t, time.Since(start), 3*time.Second, "time taken")
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
			assert.Equal(t, "ada", a.Owner, "Get scanned %+v", a)
			assert.Equal(t, int64(100), a.Balance, "Get scanned %+v", a)
			return nil
		}},
		{"Select", "SELECT id, owner, balance FROM q6", rows, func(q string) error {
			var as []account
			if err := db.Select(&as, q); err != nil {
				return err
			}
			assert.Len(t, as, 1, "Select scanned %+v (a retry must not duplicate rows)", as)
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
			if err = s.Select(&as, map[string]any{"owner": "ada"}); err == nil {
				assert.Len(t, as, 1, "Select scanned %+v", as)
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.Handle(tc.query, mssqltest.Error(1205), tc.reply)
			require.NoError(t, tc.run(tc.query), tc.name)
			assert.Equal(t, 2, srv.Count(tc.query), "%s: executions of %q (statements: %q)", tc.name, tc.query, srv.Statements())
		})
	}
}

func TestGetNoRowsUnchanged(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={1205:1,0}")
	var n int64
	err := db.Get(&n, "SELECT id FROM empty")
	assert.Equal(t, sql.ErrNoRows, err, "want sql.ErrNoRows itself")
}

func TestNoPerStatementRetryInTransaction(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={1205:3,0}")
	srv.Handle(update, mssqltest.Error(1205))
	tx, err := db.Beginx()
	require.NoError(t, err)
	_, err = tx.Exec(update)
	mustNumber(t, err, 1205)
	assert.Equal(t, 1, srv.Count(update), "a statement in a transaction runs once")
	assert.Empty(t, tx.FailedQuery(), "FailedQuery: begun outside RunInTx, the transaction is in no unit")
	_ = tx.Rollback()
	assert.Empty(t, srv.Committed(), "committed")
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
	require.NoError(t, err)
	assert.Equal(t, 2, runs, "runs of the closure")
	assert.Equal(t, coretest.Seconds(1), clock.Sleeps(), "waits")
	assert.Equal(t, [][]string{{debit, credit}}, srv.Committed(), "exactly one transaction with both statements is committed")
	assert.Len(t, srv.RolledBack(), 1, "the deadlocked attempt is rolled back")
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
	assert.Equal(t, 1, runs, "runs (the failed statement is a delete)")
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
	require.ErrorIs(t, err, core.ErrCommitUnknown)
	assert.Equal(t, 1, runs, "a commit of unknown outcome must not be retried")
}

func TestRunInTxPanicRollsBack(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={1205:2,1}")
	defer func() {
		assert.Equal(t, "boom", recover(), "the closure's panic goes on")
		assert.Empty(t, srv.Committed(), "committed")
		assert.Equal(t, 1, srv.Rollbacks(), "rollbacks")
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
		// The login loop retries every SQL Server error that is not
		// fatal, whatever retryConn says (JDBC's login()); the replaced
		// list stops the connection loop.
		{"replace", "&retryConn={18456}", 40613, 3, false, 2, []time.Duration{0}},
		{"named", "&retryConn={%2B4064}", 4064, 3, true, 4, []time.Duration{0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mssqltest.NewServer(t)
			srv.FailLogin(tc.fail, tc.times)
			clock := coretest.NewClock(time.Time{})
			db, err := sqlxcrl.Connect("sqlserver", srv.DSN()+tc.params, config.WithClock(clock))
			if tc.ok {
				require.NoError(t, err, "Connect")
				db.Close()
			} else {
				require.Error(t, err, "Connect")
				mustNumber(t, err, tc.fail)
			}
			assert.Equal(t, tc.logins, srv.Logins(), "logins")
			assert.Equal(t, tc.waits, clock.Sleeps(), "waits")
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
	_, err := db.Exec(update)
	require.NoError(t, err, "Exec on a new connection whose first login failed")
	assert.Equal(t, 2, srv.Logins()-before, "logins")
}

func TestTwoDBsAreIsolated(t *testing.T) {
	srv := mssqltest.NewServer(t)
	a, _ := open(t, srv, "&retryExec={1205:2,0}")
	b, _ := open(t, srv, "&retryExec={1222:2,0}")
	srv.Handle("UPDATE a SET x = 1", mssqltest.Error(1205))
	_, errA := a.Exec("UPDATE a SET x = 1")
	_, errB := b.Exec("UPDATE a SET x = 1")
	assert.ErrorIs(t, errA, core.ErrRetriesExhausted, "a retries 1205")
	assert.NotErrorIs(t, errB, core.ErrRetriesExhausted, "b does not retry 1205")
	assert.Equal(t, 3+1, srv.Count("UPDATE a SET x = 1"), "3 for a and 1 for b")
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
			_, err := db.Exec(q)
			assert.NoError(t, err, q)
		}()
	}
	wg.Wait()
}

func TestBadSettings(t *testing.T) {
	srv := mssqltest.NewServer(t)
	for _, params := range []string{"&retryExec={1205:3,2AND2}", "&connectRetryCount=300", "&loginTimeout=abc"} {
		_, err := sqlxcrl.Open("sqlserver", srv.DSN()+params)
		assert.Error(t, err, "Open accepts %s", params)
	}
	// NewDb cannot return the error: every statement reports it instead.
	raw, err := sql.Open("sqlserver", srv.DSN())
	require.NoError(t, err)
	defer raw.Close()
	db := sqlxcrl.NewDb(raw, "sqlserver", sqlxcrl.WithRetryExec("{1205:3,2AND2}"))
	_, err = db.Exec(update)
	assert.ErrorContains(t, err, "2AND2", "Exec on a misconfigured DB")
	var n int64
	assert.ErrorContains(t, db.QueryRowx("select 1").Scan(&n), "2AND2", "QueryRowx on a misconfigured DB")
}

// Over a pool crl did not open, NewDb's statements run once, as with
// sqlx alone; settings given for such a pool are refused from the first
// statement on, with an error naming crl.OpenDB.
func TestNewDbOverAForeignPool(t *testing.T) {
	srv := mssqltest.NewServer(t)
	raw, err := sql.Open("sqlserver", srv.DSN())
	require.NoError(t, err)
	defer raw.Close()
	srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))

	refused := sqlxcrl.NewDb(raw, "sqlserver", sqlxcrl.WithRetryExec("{1205:1,0}"))
	_, err = refused.Exec(update)
	assert.ErrorIs(t, err, sqlxcrl.ErrForeignPoolSettings)
	assert.ErrorContains(t, err, "crl.OpenDB")
	assert.Equal(t, 0, srv.Count(update), "a refused DB sends nothing")

	db := sqlxcrl.NewDb(raw, "sqlserver")
	_, err = db.Exec(update)
	mustNumber(t, err, 1205)
	assert.Equal(t, 1, srv.Count(update), "executions")
}

// TestConfigErrorsNameThePackage: a bad setting is reported as gormcrl
// reports it, with the package that the caller called first.
func TestConfigErrorsNameThePackage(t *testing.T) {
	_, err := sqlxcrl.Open("sqlserver", "server=x;retryExec={1205:3")
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "sqlxcrl: config: "), err.Error())
	_, err = sqlxcrl.WrapDB(nil, "sqlserver", sqlxcrl.WithRetryExec("{1205:3"))
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "sqlxcrl: config: "), err.Error())
}
