package crl_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/internal/testsupport/optdriver"
	"github.com/crl-go/crl/mssqltest"
)

// open opens a crl pool on the stand-in with the DSN parameters params
// (URL form, '+' written %2B) and a virtual clock.
func open(t *testing.T, srv *mssqltest.Server, params string, opts ...crl.Option) (*sql.DB, *coretest.Clock) {
	t.Helper()
	clock := coretest.NewClock(time.Time{})
	db, err := crl.Open("sqlserver", srv.DSN()+params, append([]crl.Option{config.WithClock(clock)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, db.Close()) })
	require.NoError(t, db.Ping())
	clock.Reset()
	return db, clock
}

func requireNumber(t *testing.T, err error, want int32) {
	t.Helper()
	var me mssql.Error
	require.ErrorAs(t, err, &me, "want an mssql.Error %d", want)
	require.Equal(t, want, me.Number)
}

const (
	update = "UPDATE accounts SET balance = balance - 10 WHERE id = 1"
	insert = "INSERT INTO audit (note) VALUES ('x')"
	read   = "SELECT balance FROM accounts WHERE id = 1"
)

func TestEveryStatementKindIsRetried(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		query string
		reply mssqltest.Reply
		run   func(db *sql.DB, q string) error
	}{
		{"Exec", update, mssqltest.Affected(1), func(db *sql.DB, q string) error {
			res, err := db.ExecContext(ctx, q)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err == nil && n != 1 {
				err = errors.New("rows affected != 1")
			}
			return err
		}},
		{"Query", read, mssqltest.Rows([]string{"balance"}, []any{int64(90)}), func(db *sql.DB, q string) error {
			rows, err := db.QueryContext(ctx, q)
			if err != nil {
				return err
			}
			defer rows.Close()
			var got []int64
			for rows.Next() {
				var b int64
				if err := rows.Scan(&b); err != nil {
					return err
				}
				got = append(got, b)
			}
			if err := rows.Err(); err != nil {
				return err
			}
			if len(got) != 1 || got[0] != 90 {
				return errors.New("wrong rows")
			}
			return nil
		}},
		{"QueryRow", read, mssqltest.Rows([]string{"balance"}, []any{int64(90)}), func(db *sql.DB, q string) error {
			var b int64
			return db.QueryRowContext(ctx, q).Scan(&b)
		}},
		{"Prepare", update, mssqltest.Affected(1), func(db *sql.DB, q string) error {
			st, err := db.PrepareContext(ctx, q)
			if err != nil {
				return err
			}
			defer st.Close()
			_, err = st.ExecContext(ctx)
			return err
		}},
		{"Conn", update, mssqltest.Affected(1), func(db *sql.DB, q string) error {
			c, err := db.Conn(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			_, err = c.ExecContext(ctx, q)
			return err
		}},
		{"Stmt in a Conn", read, mssqltest.Rows([]string{"balance"}, []any{int64(90)}), func(db *sql.DB, q string) error {
			c, err := db.Conn(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			var b int64
			return c.QueryRowContext(ctx, q).Scan(&b)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mssqltest.NewServer(t)
			db, clock := open(t, srv, "&retryExec={1205:3,2*2}")
			srv.Handle(tc.query, mssqltest.Error(1205), mssqltest.Error(1205), tc.reply)
			require.NoError(t, tc.run(db, tc.query))
			assert.Equal(t, 3, srv.Count(tc.query), "attempts")
			assert.Equal(t, coretest.Seconds(2, 4), clock.Sleeps(), "waits")
		})
	}
}

func TestRetriesExhaustedKeepTheDriverError(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={1205:2,0%2B0}")
	srv.Handle(read, mssqltest.Error(1205))
	var b int64
	err := db.QueryRow(read).Scan(&b)
	assert.ErrorIs(t, err, core.ErrRetriesExhausted)
	requireNumber(t, err, 1205)
	assert.Equal(t, 3, srv.Count(read))
}

func TestAnErrorNoRuleRetriesIsTheDriversOwn(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={1205:3,0%2B0:select}")
	srv.Handle(update, mssqltest.Error(1205))
	_, err := db.Exec(update)
	var me mssql.Error
	require.True(t, errors.As(err, &me))
	_, isValue := err.(mssql.Error)
	assert.True(t, isValue, "the driver's own value, got %T", err)
	assert.Equal(t, 1, srv.Count(update))
}

func TestAStatementInATransactionIsNotRetriedAlone(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={1205:3,0%2B0}&txReplay=off") // replay re-runs it in a new transaction: replay_integration_test.go
	srv.Handle(update, mssqltest.Error(1205))
	tx, err := db.Begin()
	require.NoError(t, err)
	_, err = tx.Exec(update)
	requireNumber(t, err, 1205)
	_ = tx.Rollback() // SQL Server already rolled the victim's transaction back: 3903
	assert.Equal(t, 1, srv.Count(update))
}

// A transaction begun as statement text on a *sql.Conn (BEGIN TRAN, SET
// IMPLICIT_TRANSACTIONS ON) is one too: its statements run once, and the
// deadlock victim's error is the driver's own mssql.Error; COMMIT does not
// end implicit transactions, OFF after the transaction's end does, and
// statements are retried again.
func TestAStatementInATextTransactionIsNotRetriedAlone(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		begin []string // the transaction's beginning, then statements still in it
		end   []string // what ends it
	}{
		{"BEGIN TRAN", []string{"BEGIN TRAN"}, []string{"ROLLBACK"}},
		{"BEGIN TRANSACTION, nested", []string{"BEGIN TRANSACTION", "BEGIN TRAN", "COMMIT"}, []string{"COMMIT TRAN"}},
		{"SET IMPLICIT_TRANSACTIONS ON", []string{"SET IMPLICIT_TRANSACTIONS ON", "COMMIT"}, []string{"ROLLBACK", "SET IMPLICIT_TRANSACTIONS OFF"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := mssqltest.NewServer(t)
			db, _ := open(t, srv, "&retryExec={1205:3,0%2B0}")
			conn, err := db.Conn(ctx)
			require.NoError(t, err)
			defer conn.Close()
			srv.Reset()
			srv.Handle(update, mssqltest.Error(1205))
			for _, q := range c.begin {
				_, err = conn.ExecContext(ctx, q)
				require.NoError(t, err)
			}
			_, err = conn.ExecContext(ctx, update)
			requireNumber(t, err, 1205)
			_, isValue := err.(mssql.Error)
			assert.True(t, isValue, "the driver's own value, got %T", err)
			assert.Equal(t, 1, srv.Count(update), "run once")
			var b int64
			srv.Handle(read, mssqltest.Error(1205))
			requireNumber(t, conn.QueryRowContext(ctx, read).Scan(&b), 1205)
			assert.Equal(t, 1, srv.Count(read), "a query too")
			for _, q := range c.end {
				_, err = conn.ExecContext(ctx, q)
				require.NoError(t, err)
			}
			want := append(append(append([]string{}, c.begin...), update, read), c.end...)
			assert.Equal(t, want, srv.Statements(), "nothing ran again, in or out of the transaction")

			srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
			_, err = conn.ExecContext(ctx, update)
			require.NoError(t, err, "retried again after the end")
			assert.Equal(t, 3, srv.Count(update))
		})
	}
}

func TestRunInTxRetriesTheWholeTransaction(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, clock := open(t, srv, "&retryExec={1205:3,1:update}&txReplay=off") // the helper's own re-run
	srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
	runs := 0
	err := crl.RunInTx(context.Background(), db, nil, func(tx *sql.Tx) error {
		runs++
		if _, err := tx.Exec(insert); err != nil {
			return err
		}
		_, err := tx.Exec(update)
		return err
	})
	require.NoError(t, err)
	assert.Equal(t, 2, runs)
	assert.Equal(t, coretest.Seconds(1), clock.Sleeps())
	assert.Equal(t, [][]string{{insert, update}}, srv.Committed())
	assert.Equal(t, 1, srv.Rollbacks())
}

// The filter is checked against the statement whose error ended the
// transaction, not the first or the last statement of the closure.
func TestRunInTxChecksTheFilterAgainstTheFailedStatement(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={1205:3,1:insert}")
	srv.Handle(update, mssqltest.Error(1205))
	runs := 0
	err := crl.RunInTx(context.Background(), db, nil, func(tx *sql.Tx) error {
		runs++
		if _, err := tx.Exec(insert); err != nil {
			return err
		}
		_, err := tx.Exec(update)
		return err
	})
	requireNumber(t, err, 1205)
	assert.Equal(t, 1, runs, "UPDATE failed; the rule's filter names insert only")
}

func TestRunInTxWhoseClosureCommitsIsToldSo(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={1205:3,0%2B0}")
	runs := 0
	err := crl.RunInTx(context.Background(), db, nil, func(tx *sql.Tx) error {
		runs++
		_, err := tx.Exec(update)
		if err != nil {
			return err
		}
		return tx.Commit()
	})
	require.Error(t, err)
	assert.ErrorIs(t, err, crl.ErrClosureEndedTx)
	assert.NotErrorIs(t, err, core.ErrCommitUnknown)
	assert.ErrorIs(t, err, sql.ErrTxDone)
	assert.Equal(t, 1, runs)
	assert.Equal(t, 1, srv.Commits(), "the closure's own COMMIT")
}

func TestRunInTxOnAPoolCrlDidNotOpen(t *testing.T) {
	srv := mssqltest.NewServer(t)
	plain, err := sql.Open("sqlserver", srv.DSN())
	require.NoError(t, err)
	defer plain.Close()
	_, ok := crl.RuntimeOf(plain)
	assert.False(t, ok)
	_, ok = crl.RuntimeOf(nil)
	assert.False(t, ok)
	// Over such a pool the unit runs once, as without crl, and its error
	// comes back as it is.
	srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
	runs := 0
	err = crl.RunInTx(context.Background(), plain, nil, func(tx *sql.Tx) error {
		runs++
		_, err := tx.Exec(update)
		return err
	})
	var merr mssql.Error
	require.ErrorAs(t, err, &merr, "the driver's own error")
	assert.Equal(t, int32(1205), merr.Number)
	assert.Equal(t, 1, runs, "runs")
	assert.Equal(t, 1, srv.Count(update), "executions")
	assert.Error(t, crl.RunInTx(context.Background(), nil, nil, func(*sql.Tx) error { return nil }), "a nil pool")
}

func TestRetryReRunsAUnitAroundALibrarysOwnTransaction(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, clock := open(t, srv, "&retryExec={1205:3,1:update}&txReplay=off") // the helper's own re-run
	srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
	runs := 0
	// A library's own transaction helper: it knows nothing of crl.
	inTx := func(ctx context.Context, fn func(tx *sql.Tx) error) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			return errors.Join(err, tx.Rollback())
		}
		return tx.Commit()
	}
	err := crl.Retry(context.Background(), func(ctx context.Context) error {
		runs++
		return inTx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, insert); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, update)
			return err
		})
	})
	require.NoError(t, err)
	assert.Equal(t, 2, runs)
	assert.Equal(t, coretest.Seconds(1), clock.Sleeps())
	assert.Equal(t, [][]string{{insert, update}}, srv.Committed())
}

// Statements run with Retry's context are not retried alone: the unit is.
func TestRetryRunsItsStatementsOnceEach(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={1205:2,0%2B0}")
	srv.Handle(update, mssqltest.Error(1205))
	runs := 0
	err := crl.Retry(context.Background(), func(ctx context.Context) error {
		runs++
		_, err := db.ExecContext(ctx, update)
		return err
	})
	assert.ErrorIs(t, err, core.ErrRetriesExhausted)
	requireNumber(t, err, 1205)
	assert.Equal(t, 3, runs)
	assert.Equal(t, 3, srv.Count(update), "one execution a run")
}

func TestRetryWithoutACrlPoolRunsOnce(t *testing.T) {
	boom := errors.New("boom")
	runs := 0
	err := crl.Retry(context.Background(), func(context.Context) error { runs++; return boom })
	assert.Same(t, boom, err)
	assert.Equal(t, 1, runs)
	assert.Error(t, crl.Retry(context.Background(), nil))
}

func TestRegisterNamesADriverUnderCrl(t *testing.T) {
	srv := mssqltest.NewServer(t)
	name, err := crl.Register("sqlserver", crl.WithRetryExec("{1205:3,0+0}"))
	require.NoError(t, err)
	assert.Contains(t, sql.Drivers(), name)
	db, err := sql.Open(name, srv.DSN())
	require.NoError(t, err)
	defer db.Close()
	srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
	_, err = db.Exec(update)
	require.NoError(t, err)
	assert.Equal(t, 2, srv.Count(update))
	_, ok := crl.RuntimeOf(db)
	assert.True(t, ok)

	_, err = crl.Register("no-such-driver")
	assert.ErrorContains(t, err, `"no-such-driver"`)
	_, err = crl.Register("sqlserver", crl.WithRetryExec("{1205:x}"))
	assert.ErrorIs(t, err, core.ErrInvalidParameterNumber)
}

func TestUnwrapGivesTheDriversConnection(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "")
	c, err := db.Conn(context.Background())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Raw(func(dc any) error {
		_, ok := crl.Unwrap(dc).(*mssql.Conn)
		assert.True(t, ok, "Unwrap gave %T", crl.Unwrap(dc))
		return nil
	}))
	assert.Equal(t, 42, crl.Unwrap(42))
}

func TestOpenRejectsBadInput(t *testing.T) {
	_, err := crl.Open("sqlserver", "sqlserver://h?retryExec={1205:300,1}")
	assert.ErrorIs(t, err, core.ErrInvalidParameterNumber)
	_, err = crl.OpenDB(nil, "sqlserver")
	assert.Error(t, err)
}

// An error after the first row reached the caller is reported and
// returned, never retried: the caller may have read the row.
func TestAnErrorAfterTheFirstRowIsReportedNotRetried(t *testing.T) {
	srv := mssqltest.NewServer(t)
	obs := &coretest.Observer{}
	db, _ := open(t, srv, "&retryExec={1205:3,0%2B0}", config.WithObserver(obs))
	srv.Handle(read, mssqltest.RowsThenError(1205, []string{"balance"}, []any{int64(1)}, []any{int64(2)}))
	rows, err := db.Query(read)
	require.NoError(t, err)
	var got []int64
	for rows.Next() {
		var b int64
		require.NoError(t, rows.Scan(&b))
		got = append(got, b)
	}
	requireNumber(t, rows.Err(), 1205)
	require.NoError(t, rows.Close())
	assert.Equal(t, []int64{1, 2}, got)
	assert.Equal(t, 1, srv.Count(read), "not retried")
	ev := obs.Snapshot()
	require.Len(t, ev.GiveUps, 1, "reported")
	assert.ErrorIs(t, ev.GiveUps[0].Reason, core.ErrAfterFirstRow)
}

// An error that comes before the first row, even after the columns, is
// inside the attempt.
func TestAnErrorBeforeTheFirstRowIsRetried(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={1205:3,0%2B0}")
	srv.Handle(read, mssqltest.RowsThenError(1205, []string{"balance"}), mssqltest.Rows([]string{"balance"}, []any{int64(7)}))
	var b int64
	require.NoError(t, db.QueryRow(read).Scan(&b))
	assert.Equal(t, int64(7), b)
	assert.Equal(t, 2, srv.Count(read))
}

// A driver whose connection cannot run a statement directly and whose
// statement converts a type only it knows (a ColumnConverter) gets that
// argument converted through crl.OpenDB, as with the driver alone: the
// layer's connection offers no ExecerContext for database/sql to convert
// the argument for. crl.Unwrap finds the driver's connection under such a
// connection of the layer.
func TestOpenDBConvertsArgumentsAsTheDriverAlone(t *testing.T) {
	d := optdriver.New(optdriver.ConnPrepareContext|optdriver.ConnBeginTx, optdriver.StmtExecContext|optdriver.ColumnConverter, false)
	db, err := crl.OpenDB(d, "optdriver")
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec("EXEC ?", optdriver.Money{Cents: 250})
	require.NoError(t, err)
	assert.Contains(t, d.Log(), `#1 Stmt.ExecContext "EXEC ?" [1:int64(250)]`)

	c, err := db.Conn(context.Background())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Raw(func(dc any) error {
		n, ok := optdriver.Number(crl.Unwrap(dc))
		assert.True(t, ok && n == 1, "Unwrap gave %T", crl.Unwrap(dc))
		return nil
	}))
}

// go-mssqldb's own argument types pass through the driver layer's
// NamedValueChecker as through the driver's.
func TestDriversArgumentTypesPassThrough(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={1205:3,0%2B0}")
	const q = "UPDATE accounts SET name = @p1, code = @p2 WHERE id = @p3"
	srv.Handle(q, mssqltest.Error(1205), mssqltest.Affected(1))
	_, err := db.Exec(q, mssql.VarChar("pen"), mssql.NVarCharMax("cup"), sql.Named("p3", 1))
	require.NoError(t, err)
	assert.Equal(t, 2, srv.Count(q))
}
