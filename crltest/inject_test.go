package crltest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/crltest"
	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

const (
	update = "UPDATE accounts SET balance = balance - 10 WHERE id = 1"
	insert = "INSERT INTO audit (note) VALUES ('moved')"
	read   = "SELECT balance FROM accounts WHERE id = 1"
)

// stand is a crl pool on an mssqltest server, with a virtual clock and a
// recording observer.
type stand struct {
	srv   *mssqltest.Server
	db    *sql.DB
	clock *coretest.Clock
	obs   *coretest.Observer
}

// newStand opens a pool with the DSN parameters params (URL form) on a
// new server that answers update and insert with one row affected and
// read with one row.
// noRules are the DSN parameters of a pool without statement rules
// (retryExec= is none; without it a pool runs the default rule, which
// retries a deadlock), for tests of the faults themselves.
const noRules = "&retryExec="

func newStand(t *testing.T, params string, opts ...crl.Option) *stand {
	t.Helper()
	s := &stand{srv: mssqltest.NewServer(t), clock: coretest.NewClock(time.Time{}), obs: &coretest.Observer{}}
	db, err := crl.Open("sqlserver", s.srv.DSN()+params,
		append([]crl.Option{config.WithClock(s.clock), config.WithObserver(s.obs)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, db.Close()) })
	require.NoError(t, db.Ping())
	s.srv.Reset()
	s.clock.Reset()
	s.srv.Handle(update, mssqltest.Affected(1))
	s.srv.Handle(insert, mssqltest.Affected(1))
	s.srv.Handle(read, mssqltest.Rows([]string{"balance"}, []any{int64(90)}))
	s.db = db
	return s
}

// executed returns how many statements the server received.
func (s *stand) executed() int { return len(s.srv.Statements()) }

func requireNumber(t *testing.T, err error, want int32) {
	t.Helper()
	var me mssql.Error
	require.ErrorAs(t, err, &me, "want an mssql.Error %d", want)
	require.Equal(t, want, me.Number)
}

func TestInjectedStatementIsRetriedAndNeverSent(t *testing.T) {
	s := newStand(t, "&retryExec={1205:3,100ms*2}")
	undo := crltest.Inject(s.db, crltest.Fault{Err: crltest.Deadlock("sqlserver"), Times: 2})
	defer undo()

	res, err := s.db.Exec(update)
	require.NoError(t, err)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "the server's answer")
	assert.Equal(t, 1, s.srv.Count(update), "the injected failures never reached the server")
	assert.Equal(t, coretest.Seconds(0.1, 0.2), s.clock.Sleeps(), "the rule's waits")
	ev := s.obs.Snapshot()
	require.Len(t, ev.Retries, 2)
	for i, r := range ev.Retries {
		assert.Equal(t, i+1, r.Attempt)
		assert.Equal(t, "1205", r.Token)
		assert.Equal(t, update, r.Query)
		requireNumber(t, r.Err, 1205)
	}
	require.Len(t, ev.Successes, 1)
	assert.Equal(t, 3, ev.Successes[0].Attempts)
}

func TestInjectedErrorIsTheDriversValue(t *testing.T) {
	s := newStand(t, noRules) // the caller gets the error as the driver would return it
	defer crltest.Inject(s.db, crltest.Fault{Err: crltest.Deadlock("sqlserver")})()

	_, err := s.db.Exec(update)
	assert.Equal(t, crltest.Deadlock("sqlserver"), err, "unwrapped")
	requireNumber(t, err, 1205)
	err = s.db.QueryRow(read).Scan(new(int64))
	requireNumber(t, err, 1205)
	assert.Zero(t, s.executed(), "nothing reached the server")
}

func TestInjectedErrorGivenUpIsStillTheDriversType(t *testing.T) {
	s := newStand(t, "&retryExec={1205:2,100ms*2}")
	defer crltest.Inject(s.db, crltest.Fault{Err: crltest.Deadlock("sqlserver")})()

	_, err := s.db.Exec(update)
	require.ErrorIs(t, err, core.ErrRetriesExhausted)
	requireNumber(t, err, 1205)
	assert.Zero(t, s.executed())
	require.Len(t, s.obs.Snapshot().GiveUps, 1)
}

// run is one of the statements TestFaultSelects runs, in its order.
type run struct {
	name string
	do   func(ctx context.Context, db *sql.DB, tx *sql.Tx) error
}

var runs = []run{
	{"exec", func(ctx context.Context, db *sql.DB, _ *sql.Tx) error {
		_, err := db.ExecContext(ctx, update)
		return err
	}},
	{"query", func(ctx context.Context, db *sql.DB, _ *sql.Tx) error {
		return db.QueryRowContext(ctx, read).Scan(new(int64))
	}},
	{"prepared exec", func(ctx context.Context, db *sql.DB, _ *sql.Tx) error {
		st, err := db.PrepareContext(ctx, insert)
		if err != nil {
			return err
		}
		defer st.Close()
		_, err = st.ExecContext(ctx)
		return err
	}},
	{"prepared query", func(ctx context.Context, db *sql.DB, _ *sql.Tx) error {
		st, err := db.PrepareContext(ctx, read)
		if err != nil {
			return err
		}
		defer st.Close()
		return st.QueryRowContext(ctx).Scan(new(int64))
	}},
	{"tx exec", func(ctx context.Context, _ *sql.DB, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, update)
		return err
	}},
	{"tx query", func(ctx context.Context, _ *sql.DB, tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, read).Scan(new(int64))
	}},
	{"commit", func(context.Context, *sql.DB, *sql.Tx) error { return nil }}, // run by the test
}

func TestFaultSelects(t *testing.T) {
	all := []string{"exec", "query", "prepared exec", "prepared query", "tx exec", "tx query"}
	for _, tc := range []struct {
		name  string
		fault crltest.Fault
		fails []string
	}{
		{"every statement, never COMMIT", crltest.Fault{}, all},
		{"Exec", crltest.Fault{Kind: crltest.Exec}, []string{"exec", "prepared exec", "tx exec"}},
		{"Query", crltest.Fault{Kind: crltest.Query}, []string{"query", "prepared query", "tx query"}},
		{"Commit", crltest.Fault{Kind: crltest.Commit}, []string{"commit"}},
		{"InTx", crltest.Fault{InTx: true}, []string{"tx exec", "tx query"}},
		{"InTx Commit", crltest.Fault{InTx: true, Kind: crltest.Commit}, []string{"commit"}},
		{"Match, any case", crltest.Fault{Match: "update ACCOUNTS"}, []string{"exec", "tx exec"}},
		{"Match a word inside", crltest.Fault{Match: "audit"}, []string{"prepared exec"}},
		{"Match and Query", crltest.Fault{Match: "accounts", Kind: crltest.Query}, []string{"query", "prepared query", "tx query"}},
		{"Match COMMIT", crltest.Fault{Match: "commit", Kind: crltest.Commit}, []string{"commit"}},
		{"Match no COMMIT", crltest.Fault{Match: "update", Kind: crltest.Commit}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStand(t, noRules)
			f := tc.fault
			f.Err = crltest.LockTimeout("sqlserver")
			defer crltest.Inject(s.db, f)()
			assert.Equal(t, tc.fails, failing(t, s.db), "the statements that failed")
		})
	}
}

// failing runs every statement of runs on db, those of a transaction in
// one, and returns the names of those that failed with 1222.
func failing(t *testing.T, db *sql.DB) []string {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	var failed []string
	for _, r := range runs {
		err := r.do(ctx, db, tx)
		if r.name == "commit" {
			err = tx.Commit()
		}
		if err != nil {
			requireNumber(t, err, 1222)
			failed = append(failed, r.name)
		}
	}
	return failed
}

func TestFaultTimes(t *testing.T) {
	s := newStand(t, noRules)
	undo := crltest.Inject(s.db, crltest.Fault{Err: crltest.Throttle("sqlserver"), Times: 2})
	for i, fails := range []bool{true, true, false, false} {
		_, err := s.db.Exec(update)
		if fails {
			requireNumber(t, err, 40501)
		} else {
			require.NoError(t, err, "statement %d", i+1)
		}
	}
	assert.Equal(t, 2, s.srv.Count(update), "the two that did not fail reached the server")
	undo()
	undo() // again: nothing
}

func TestUndoRestores(t *testing.T) {
	s := newStand(t, noRules)
	undo := crltest.Inject(s.db, crltest.Fault{Err: crltest.Failover("sqlserver")})
	for range 3 {
		_, err := s.db.Exec(update)
		requireNumber(t, err, 40197)
	}
	undo()
	_, err := s.db.Exec(update)
	require.NoError(t, err)
	assert.Equal(t, 1, s.srv.Count(update))
}

func TestFaultsStackAndUndoAlone(t *testing.T) {
	s := newStand(t, noRules)
	undoFirst := crltest.Inject(s.db, crltest.Fault{Err: crltest.Deadlock("sqlserver"), Match: "accounts"})
	undoSecond := crltest.Inject(s.db, crltest.Fault{Err: crltest.LockTimeout("sqlserver")})
	defer undoSecond()
	_, err := s.db.Exec(update)
	requireNumber(t, err, 1205) // the first injected that matches wins
	_, err = s.db.Exec(insert)
	requireNumber(t, err, 1222)
	undoFirst()
	_, err = s.db.Exec(update)
	requireNumber(t, err, 1222)
	undoSecond()
	_, err = s.db.Exec(update)
	require.NoError(t, err)
}

func TestFaultStaysInItsPool(t *testing.T) {
	a, b := newStand(t, noRules), newStand(t, noRules)
	defer crltest.Inject(a.db, crltest.Fault{Err: crltest.Deadlock("sqlserver")})()
	_, err := a.db.Exec(update)
	requireNumber(t, err, 1205)
	_, err = b.db.Exec(update)
	require.NoError(t, err)
}

// Times holds when statements run at once on many connections.
func TestFaultTimesUnderConcurrency(t *testing.T) {
	s := newStand(t, noRules)
	s.db.SetMaxOpenConns(8)
	defer crltest.Inject(s.db, crltest.Fault{Err: crltest.Deadlock("sqlserver"), Times: 10})()
	var failed atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				if _, err := s.db.Exec(update); err != nil {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(10), failed.Load())
	assert.Equal(t, 30, s.srv.Count(update))
}

// A fault at COMMIT: the transaction is rolled back on the server, and
// the driver layer replays it (its UPDATE re-sent, COMMIT again): the
// closure of crl.RunInTx runs once.
func TestFaultAtCommit(t *testing.T) {
	s := newStand(t, "&retryExec={3960:1,100ms*2}")
	defer crltest.Inject(s.db, crltest.Fault{Err: crltest.Serialization("sqlserver"), Kind: crltest.Commit, Times: 1})()

	runsOfFn := 0
	err := crl.RunInTx(context.Background(), s.db, nil, func(tx *sql.Tx) error {
		runsOfFn++
		_, err := tx.Exec(update)
		return err
	})
	require.NoError(t, err)
	assert.Equal(t, 1, runsOfFn, "replayed: the closure ran once")
	assert.Equal(t, [][]string{{update}}, s.srv.Committed(), "the replay committed")
	assert.Equal(t, [][]string{{update}}, s.srv.RolledBack(), "the first was rolled back, as a refused COMMIT leaves it")
	assert.Equal(t, 1, s.srv.Count("COMMIT TRANSACTION"), "the failed COMMIT never reached the server")
	ev := s.obs.Snapshot()
	require.Len(t, ev.Retries, 1)
	assert.Equal(t, core.KindTransaction, ev.Retries[0].Kind)
	assert.Equal(t, "COMMIT", ev.Retries[0].Query, "the rule's filter sees the COMMIT")
}

// A fault inside a transaction: crl.RunInTx rolls the transaction back
// and runs the closure again.
func TestFaultInTransaction(t *testing.T) {
	s := newStand(t, "&retryExec={1205:3,100ms*2}")
	defer crltest.Inject(s.db, crltest.Fault{Err: crltest.Deadlock("sqlserver"), Match: "audit", InTx: true, Times: 1})()

	err := crl.RunInTx(context.Background(), s.db, nil, func(tx *sql.Tx) error {
		if _, err := tx.Exec(update); err != nil {
			return err
		}
		_, err := tx.Exec(insert)
		return err
	})
	require.NoError(t, err)
	assert.Equal(t, [][]string{{update}}, s.srv.RolledBack(), "the first attempt's update, rolled back")
	assert.Equal(t, [][]string{{update, insert}}, s.srv.Committed())
	assert.Equal(t, 1, s.srv.Count(insert), "the failed insert never reached the server")
	ev := s.obs.Snapshot()
	require.Len(t, ev.Retries, 1)
	assert.Equal(t, insert, ev.Retries[0].Query, "the statement whose injected error ended the transaction")
}

// Injected faults spend the retry budget and move the circuit breaker as
// the server's own errors do.
func TestInjectedFaultsSpendTheBudget(t *testing.T) {
	s := newStand(t, "&retryExec={1222:3,100ms*2}", config.WithRetryBudget(core.BudgetSettings{Max: 4}))
	defer crltest.Inject(s.db, crltest.Fault{Err: crltest.LockTimeout("sqlserver")})()

	_, err := s.db.Exec(update)
	require.ErrorIs(t, err, core.ErrRetryBudgetExceeded, "a lock time-out is overload: 2 tokens a retry, half of 4 to spend")
	requireNumber(t, err, 1222)
	ev := s.obs.Snapshot()
	assert.Len(t, ev.Retries, 1)
	require.Len(t, ev.GiveUps, 1)
	assert.ErrorIs(t, ev.GiveUps[0].Reason, core.ErrRetryBudgetExceeded)
	assert.Zero(t, s.executed())
}

func TestInjectedFaultsOpenTheBreaker(t *testing.T) {
	s := newStand(t, "&retryExec={1205:1,100ms*2}",
		config.WithCircuitBreaker(core.BreakerSettings{Failures: 2, OpenFor: time.Minute}))
	undo := crltest.Inject(s.db, crltest.Fault{Err: crltest.Deadlock("sqlserver")})
	for range 2 {
		_, err := s.db.Exec(update)
		require.ErrorIs(t, err, core.ErrRetriesExhausted)
	}
	_, err := s.db.Exec(update)
	require.ErrorIs(t, err, core.ErrCircuitOpen)
	requireNumber(t, err, 1205) // the open breaker's error wraps the last driver error
	ev := s.obs.Snapshot()
	require.Len(t, ev.GiveUps, 3)
	assert.ErrorIs(t, ev.GiveUps[2].Reason, core.ErrCircuitOpen)

	undo()
	s.clock.Advance(time.Minute)
	_, err = s.db.Exec(update)
	require.NoError(t, err, "the probe after the fault is gone")
	assert.Equal(t, 1, s.srv.Count(update), "only the probe reached the server")
}

// recorder is a testing.TB that records what Inject reports and defers.
type recorder struct {
	testing.TB
	errors   []string
	cleanups []func()
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

func TestInjectOnAPoolCrlDidNotOpen(t *testing.T) {
	srv := mssqltest.NewServer(t)
	srv.Handle(update, mssqltest.Affected(1))
	db, err := sql.Open("sqlserver", srv.DSN())
	require.NoError(t, err)
	defer db.Close()
	f := crltest.Fault{Err: crltest.Deadlock("sqlserver")}

	err = crltest.Check(db, f)
	require.ErrorIs(t, err, crl.ErrNotCrlPool)
	assert.Contains(t, err.Error(), "crl.Open")
	assert.Regexp(t, "^crltest: ", err.Error())

	rec := &recorder{TB: t}
	f.T = rec
	undo := crltest.Inject(db, f)
	require.NotNil(t, undo)
	undo()
	assert.Equal(t, []string{err.Error()}, rec.errors, "reported to the test")
	assert.Empty(t, rec.cleanups)
	_, err = db.Exec(update)
	require.NoError(t, err, "nothing injected")
	assert.Equal(t, 1, srv.Count(update))

	require.Error(t, crltest.Check(nil, crltest.Fault{Err: crltest.Deadlock("sqlserver")}))
	crltest.Inject(nil, crltest.Fault{Err: crltest.Deadlock("sqlserver")})() // no panic
}

func TestCheckRefusesAFaultItCannotInject(t *testing.T) {
	s := newStand(t, noRules)
	for _, tc := range []struct {
		fault crltest.Fault
		want  string
	}{
		{crltest.Fault{}, `crltest: Fault.Err is nil, expected the error to inject, such as crltest.Deadlock("mysql")`},
		{crltest.Fault{Err: crltest.Deadlock("oracle")}, `crltest: Fault.Err: crltest: unknown database family "oracle", expected one of azuresql, `},
		{crltest.Fault{Err: crltest.Deadlock("mysql"), Kind: 9}, "crltest: Fault.Kind 9, expected AnyStatement, Exec, Query or Commit"},
		{crltest.Fault{Err: crltest.Deadlock("mysql"), Times: -1}, "crltest: Fault.Times -1, expected 0 (every matching statement) or more"},
	} {
		err := crltest.Check(s.db, tc.fault)
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
		rec := &recorder{TB: t}
		tc.fault.T = rec
		crltest.Inject(s.db, tc.fault)()
		assert.Equal(t, []string{err.Error()}, rec.errors)
	}
	_, err := s.db.Exec(update)
	require.NoError(t, err, "nothing was injected")
	require.NoError(t, crltest.Check(s.db, crltest.Fault{Err: errors.New("mine")}), "any error of the caller's")
}

func TestFaultWithTIsUndoneAtTheTestsEnd(t *testing.T) {
	s := newStand(t, noRules)
	rec := &recorder{TB: t}
	crltest.Inject(s.db, crltest.Fault{Err: crltest.Deadlock("sqlserver"), T: rec})
	_, err := s.db.Exec(update)
	requireNumber(t, err, 1205)
	require.Len(t, rec.cleanups, 1)
	rec.cleanups[0]()
	_, err = s.db.Exec(update)
	require.NoError(t, err)
	assert.Empty(t, rec.errors)
}

// The adapters' loops see injected faults too: sqlx's whole read is
// retried by sqlxcrl's own loop, and its transaction helper re-runs the
// closure.
func TestInjectUnderSqlxcrl(t *testing.T) {
	srv := mssqltest.NewServer(t)
	obs := &coretest.Observer{}
	db, err := sqlxcrl.Open("sqlserver", srv.DSN()+"&retryExec={1205:3,100ms*2}",
		config.WithClock(coretest.NewClock(time.Time{})), config.WithObserver(obs))
	require.NoError(t, err)
	defer db.Close()
	srv.Handle(read, mssqltest.Rows([]string{"balance"}, []any{int64(90)}))
	srv.Handle(update, mssqltest.Affected(1))
	defer crltest.Inject(db.DB.DB, crltest.Fault{Err: crltest.Deadlock("sqlserver"), Times: 2})()

	var balances []int64
	require.NoError(t, db.Select(&balances, read))
	assert.Equal(t, []int64{90}, balances)
	assert.Equal(t, 1, srv.Count(read))
	require.NoError(t, crltest.Check(db.DB.DB, crltest.Fault{Err: crltest.Deadlock("sqlserver")}))

	crltest.Inject(db.DB.DB, crltest.Fault{Err: crltest.Deadlock("sqlserver"), Kind: crltest.Commit, Times: 1, T: t})
	runsOfFn := 0
	require.NoError(t, db.RunInTx(context.Background(), nil, func(tx *sqlxcrl.Tx) error {
		runsOfFn++
		_, err := tx.Exec(update)
		return err
	}))
	assert.Equal(t, 1, runsOfFn, "the driver layer replayed the transaction")
	assert.Equal(t, [][]string{{update}}, srv.Committed())
	assert.Len(t, obs.Snapshot().Retries, 3, "two of the read, one of the transaction's replay")
}
