package gormcrl_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/gormcrl"
	"github.com/crl-go/crl/mssqltest"
)

// rollbackOnlyPool is a pool of a user's own that begins transactions it
// cannot commit: what its BeginTx returns has Rollback but no Commit, so
// it is not a gorm.TxCommitter.
type rollbackOnlyPool struct{ db *sql.DB }

func (p rollbackOnlyPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	tx, err := p.db.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return rollbackOnlyTx{tx}, nil
}

func (p rollbackOnlyPool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return p.db.PrepareContext(ctx, query)
}

func (p rollbackOnlyPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return p.db.ExecContext(ctx, query, args...)
}

func (p rollbackOnlyPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return p.db.QueryContext(ctx, query, args...)
}

func (p rollbackOnlyPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return p.db.QueryRowContext(ctx, query, args...)
}

// GetDBConn returns the pool under p, so that gorm.DB.DB finds it.
func (p rollbackOnlyPool) GetDBConn() (*sql.DB, error) { return p.db, nil }

type rollbackOnlyTx struct{ *sql.Tx }

// Commit is hidden: rollbackOnlyTx has Rollback only.
func (rollbackOnlyTx) Commit(struct{}) {}

// A transaction that the pool began but cannot commit is rolled back, not
// left open with its pooled connection (before, Transaction returned
// gorm.ErrInvalidTransaction and kept both).
func TestTransactionUncommittablePoolRolledBack(t *testing.T) {
	s := mssqltest.NewServer(t)
	sqlDB, err := crl.Open("sqlserver", s.DSN())
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, sqlDB.Close()) })
	db, err := gorm.Open(sqlserver.New(sqlserver.Config{Conn: rollbackOnlyPool{sqlDB}}), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	require.NoError(t, db.Use(gormcrl.New()))

	ran := false
	err = gormcrl.Transaction(db, func(*gorm.DB) error { ran = true; return nil })
	require.ErrorIs(t, err, gorm.ErrInvalidTransaction)
	assert.Contains(t, err.Error(), "gormcrl_test.rollbackOnlyTx")
	assert.False(t, ran, "the closure ran")
	assert.Equal(t, 1, s.Rollbacks(), "rollbacks")
	assert.Zero(t, sqlDB.Stats().InUse, "connections in use")
}

// A *gorm.DB that already carries an error runs no transaction: GORM's
// Begin would begin one and return it, open, with the error; and the error
// could not go away on a retry.
func TestTransactionOnADBWithAnErrorBeginsNothing(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil)
	sqlDB, err := db.DB()
	require.NoError(t, err)
	earlier := errors.New("an earlier error")
	failed := db.Session(&gorm.Session{})
	require.ErrorIs(t, failed.AddError(earlier), earlier)

	ran := false
	err = gormcrl.Transaction(failed, func(*gorm.DB) error { ran = true; return nil })
	require.ErrorIs(t, err, earlier)
	assert.False(t, ran, "the closure ran")
	assert.Zero(t, sqlDB.Stats().InUse, "connections in use")
	assert.Zero(t, s.Rollbacks()+s.Commits(), "transactions")
}

// In PrepareStmt mode, a statement that fails in a transaction is the
// failed statement, whichever way GORM runs it: Exec, Row, Rows, Create,
// in gormcrl.Transaction and in the implicit unit of a Create. GORM runs
// these through a *sql.Stmt that the recorder under its prepared-statement
// layer does not see: before, the filter saw the statement before (or
// none), and a rule whose filter names the failing statement did not
// retry.
func TestPrepareStmtFailedStatementRecorded(t *testing.T) {
	const handled = `DELETE FROM audit WHERE n < 0` // fails, handled by the closure
	const read = `SELECT n FROM audit`
	for name, tc := range map[string]struct {
		failing string
		run     func(tx *gorm.DB) error
	}{
		"Exec": {audit, func(tx *gorm.DB) error { return tx.Exec(audit).Error }},
		"Row": {read, func(tx *gorm.DB) error {
			var n int64
			return tx.Raw(read).Row().Scan(&n)
		}},
		"Rows": {read, func(tx *gorm.DB) error {
			rows, err := tx.Raw(read).Rows()
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
			}
			return rows.Err()
		}},
		"Create": {insertOrder, func(tx *gorm.DB) error { return tx.Create(&Order{Name: "pen"}).Error }},
	} {
		for mode, session := range map[string]bool{"gorm.Config": false, "Session": true} {
			t.Run(name+" with PrepareStmt in "+mode, func(t *testing.T) {
				s := mssqltest.NewServer(t)
				rules := gormcrl.WithRetryExec("{1205,2627:3,10ms:select,insert,update}")
				db, _ := open(t, s, &gorm.Config{PrepareStmt: !session}, rules)
				s.Handle(handled, mssqltest.Error(2627))
				s.Handle(tc.failing, mssqltest.Error(1205), idRow(8))
				runs := 0
				err := gormcrl.Transaction(db, func(tx *gorm.DB) error {
					runs++
					if session {
						tx = tx.Session(&gorm.Session{PrepareStmt: true})
					}
					_ = tx.Exec(handled).Error // a DELETE, which the filter does not name
					return tc.run(tx)
				})
				require.NoError(t, err)
				assert.Equal(t, 2, runs, "runs of the closure")
				assert.Equal(t, 2, s.Count(tc.failing), "executions of %q", tc.failing)
			})
		}
	}
}

// The implicit unit of a Create in PrepareStmt mode is retried by a rule
// whose filter names insert: the failed INSERT is recorded (before, the
// unit saw no failed statement, and only a rule without a filter retried).
func TestPrepareStmtUnitFilterSeesTheFailedStatement(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, &gorm.Config{PrepareStmt: true}, gormcrl.WithRetryExec("{1205:3,10ms:insert}"))
	s.Handle(insertOrder, mssqltest.Error(1205), idRow(8))
	o := Order{Name: "pen"}
	require.NoError(t, db.Create(&o).Error)
	assert.Equal(t, int64(8), o.ID, "ID")
	assert.Equal(t, 2, s.Count(insertOrder), "INSERTs")
	wantTxs(t, "committed", s.Committed(), []string{insertOrder})
}

// Inside gormcrl.Transaction, crl.Attempt(tx.Statement.Context) is the
// run: 1, then 2 after a deadlock; 0 outside.
func TestTransactionAttempt(t *testing.T) {
	for _, way := range []struct {
		name string
		open func(t *testing.T, s *mssqltest.Server) *gorm.DB
	}{
		{"crl.Open, no plugin", openOverCrl},
		{"gormcrl.Open", func(t *testing.T, s *mssqltest.Server) *gorm.DB { db, _ := open(t, s, nil); return db }},
	} {
		t.Run(way.name, func(t *testing.T) {
			s := mssqltest.NewServer(t)
			db := way.open(t, s)
			s.Handle(updateOrder, mssqltest.Error(1205), mssqltest.Affected(1))
			var seen []int
			require.NoError(t, gormcrl.Transaction(db, func(tx *gorm.DB) error {
				seen = append(seen, crl.Attempt(tx.Statement.Context))
				return tx.Exec(updateOrder, "cup", 7).Error
			}))
			assert.Equal(t, []int{1, 2}, seen)
			assert.Zero(t, crl.Attempt(db.Statement.Context), "outside")
		})
	}
}
