package sqlxcrl_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

const insertLedger = "INSERT INTO ledger (amount) VALUES (10)"

// runs runs fn in RunInTx after a handled duplicate key on insertLedger,
// with a rule whose filter names update only, and returns how many times
// fn ran: 2 when the UPDATE that fn runs failed and was recorded as the
// failed statement, 1 when the INSERT was taken for it.
func runsAfterAHandledInsert(t *testing.T, srv *mssqltest.Server, db *sqlxcrl.DB, fn func(tx *sqlxcrl.Tx) error) int {
	t.Helper()
	srv.Handle(insertLedger, mssqltest.Error(2627))
	runs := 0
	err := db.RunInTx(context.Background(), nil, func(tx *sqlxcrl.Tx) error {
		runs++
		_, _ = tx.Exec(insertLedger) // already there: fine
		return fn(tx)
	})
	require.NoError(t, err)
	return runs
}

// A statement prepared in the transaction, or made the transaction's own
// from a DB's, that fails when executed is the failed statement, with its
// text. (Before, Tx.Preparex and Tx.PrepareNamed returned sqlx's
// statements, whose executions were not recorded, and Tx.Stmtx panicked
// on a *sqlxcrl.Stmt.)
func TestTxPreparedStatementExecutionRecorded(t *testing.T) {
	noArgs := map[string]any{}
	for name, exec := range map[string]func(db *sqlxcrl.DB, tx *sqlxcrl.Tx) error{
		"Preparex": func(_ *sqlxcrl.DB, tx *sqlxcrl.Tx) error {
			s, err := tx.Preparex(update)
			if err != nil {
				return err
			}
			_, err = s.Exec()
			return err
		},
		"PrepareNamed": func(_ *sqlxcrl.DB, tx *sqlxcrl.Tx) error {
			s, err := tx.PrepareNamed(update)
			if err != nil {
				return err
			}
			_, err = s.Exec(noArgs)
			return err
		},
		"Stmtx of a DB's Stmt": func(db *sqlxcrl.DB, tx *sqlxcrl.Tx) error {
			s, err := db.Preparex(update)
			if err != nil {
				return err
			}
			_, err = tx.Stmtx(s).Exec()
			return err
		},
		"NamedStmt of a DB's NamedStmt": func(db *sqlxcrl.DB, tx *sqlxcrl.Tx) error {
			s, err := db.PrepareNamed(update)
			if err != nil {
				return err
			}
			_, err = tx.NamedStmt(s.NamedStmt).Exec(noArgs)
			return err
		},
		"Unsafe of Preparex": func(_ *sqlxcrl.DB, tx *sqlxcrl.Tx) error {
			s, err := tx.Preparex(update)
			if err != nil {
				return err
			}
			_, err = s.Unsafe().Exec()
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := mssqltest.NewServer(t)
			db, _ := open(t, srv, "&retryExec={1205,2627:2,0:update}")
			srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
			runs := runsAfterAHandledInsert(t, srv, db, func(tx *sqlxcrl.Tx) error { return exec(db, tx) })
			assert.Equal(t, 2, runs, "runs")
			assert.Equal(t, 2, srv.Count(update), "executions of the UPDATE")
		})
	}
}

// A *sql.Stmt made the transaction's own by Stmtx, whose text sqlxcrl
// cannot know: over a pool crl opened, the driver layer records it with its
// text, so the rule whose filter names update retries the transaction (a
// handled INSERT before it is not taken for the failed statement). Over a
// pool crl did not open, nothing is retried.
func TestTxStmtxOfAnUnknownTextRecorded(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T, srv *mssqltest.Server) *sqlxcrl.DB
		runs int
	}{
		{"crl pool", func(t *testing.T, srv *mssqltest.Server) *sqlxcrl.DB {
			db, _ := open(t, srv, "&retryExec={1205,2627:2,0:insert,update}")
			return db
		}, 2},
		{"a sql.Open pool", func(t *testing.T, srv *mssqltest.Server) *sqlxcrl.DB {
			return sqlxcrl.NewDb(mustOpenPlain(t, srv), "sqlserver")
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mssqltest.NewServer(t)
			db := tc.open(t, srv)
			srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
			raw, err := db.DB.DB.Prepare(update)
			require.NoError(t, err)
			defer raw.Close()
			srv.Handle(insertLedger, mssqltest.Error(2627))
			runs := 0
			err = db.RunInTx(context.Background(), nil, func(tx *sqlxcrl.Tx) error {
				runs++
				_, _ = tx.Exec(insertLedger)
				_, err := tx.Stmtx(raw).Exec()
				return err
			})
			if tc.runs == 1 {
				mustNumber(t, err, 1205)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.runs, runs, "runs")
		})
	}
}

// A PREPARE that fails in the transaction is the failed statement, for
// every way of preparing: the INSERT's connection breaks (handled), and
// the driver then refuses to prepare the UPDATE. (Before, Tx did not
// record a failed PREPARE: the filter saw the INSERT.)
func TestTxFailedPrepareRecorded(t *testing.T) {
	for name, prepare := range map[string]func(tx *sqlxcrl.Tx) error{
		"Prepare": func(tx *sqlxcrl.Tx) error {
			s, err := tx.Prepare(update)
			if err == nil {
				_, err = s.Exec()
			}
			return err
		},
		"Preparex": func(tx *sqlxcrl.Tx) error {
			s, err := tx.Preparex(update)
			if err == nil {
				_, err = s.Exec()
			}
			return err
		},
		"PrepareNamed": func(tx *sqlxcrl.Tx) error {
			s, err := tx.PrepareNamed(update)
			if err == nil {
				_, err = s.Exec(map[string]any{})
			}
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := mssqltest.NewServer(t)
			db, _ := open(t, srv, "&retryExec={badconn:2,0:update}")
			srv.Handle(insertLedger, mssqltest.Drop(), mssqltest.Affected(1))
			runs := 0
			err := db.RunInTx(context.Background(), nil, func(tx *sqlxcrl.Tx) error {
				runs++
				_, _ = tx.Exec(insertLedger) // the connection breaks: handled
				return prepare(tx)
			})
			require.NoError(t, err)
			assert.Equal(t, 2, runs, "runs")
			assert.Equal(t, [][]string{{insertLedger, update}}, srv.Committed(), "committed")
		})
	}
}

// tx.Stmtx takes what sqlx's takes and sqlxcrl's Stmt; for anything else
// (sqlx's panics) and for a nil statement, every execution of the Stmt it
// returns fails with ErrNotStmt, and nothing panics.
func TestTxStmtxRefusesOtherValues(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "")
	tx, err := db.Beginx()
	require.NoError(t, err)
	defer tx.Rollback()
	for name, stmt := range map[string]any{
		"a string":            update,
		"nil":                 nil,
		"a nil *sql.Stmt":     (*sql.Stmt)(nil),
		"a nil *sqlx.Stmt":    (*sqlx.Stmt)(nil),
		"a zero sqlx.Stmt":    sqlx.Stmt{},
		"a nil *sqlxcrl.Stmt": (*sqlxcrl.Stmt)(nil),
		"a refused Stmt":      tx.Stmtx(42),
	} {
		s := tx.Stmtx(stmt)
		_, err := s.Exec()
		assert.ErrorIs(t, err, sqlxcrl.ErrNotStmt, name)
		var n []int64
		assert.ErrorIs(t, s.Select(&n), sqlxcrl.ErrNotStmt, name)
		assert.ErrorIs(t, s.Unsafe().Get(&n), sqlxcrl.ErrNotStmt, name)
		assert.ErrorIs(t, s.QueryRow().Err(), sqlxcrl.ErrNotStmt, name)
		assert.ErrorIs(t, s.QueryRowx().Err(), sqlxcrl.ErrNotStmt, name)
		_, err = s.Queryx()
		assert.ErrorIs(t, err, sqlxcrl.ErrNotStmt, name)
		assert.NoError(t, s.Close(), name)
	}
	// the statements it does take still work
	srv.Handle(update, mssqltest.Affected(1))
	raw, err := db.DB.DB.Prepare(update)
	require.NoError(t, err)
	defer raw.Close()
	_, err = tx.Stmtx(raw).Exec()
	assert.NoError(t, err, "*sql.Stmt")
	sx, err := db.DB.Preparex(update)
	require.NoError(t, err)
	defer sx.Close()
	_, err = tx.Stmtx(sx).Exec()
	assert.NoError(t, err, "*sqlx.Stmt")
	_, err = tx.Stmtx(*sx).Exec()
	assert.NoError(t, err, "sqlx.Stmt")
}
