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

type rollbackOnlyTx struct{ *sql.Tx }

// Commit is hidden: rollbackOnlyTx has Rollback only.
func (rollbackOnlyTx) Commit(struct{}) {}

// A transaction that the pool began but cannot commit is rolled back, not
// left open with its pooled connection (before, Transaction returned
// gorm.ErrInvalidTransaction and kept both).
func TestTransactionUncommittablePoolRolledBack(t *testing.T) {
	s := mssqltest.NewServer(t)
	sqlDB, err := sql.Open("sqlserver", s.DSN())
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, sqlDB.Close()) })
	db, err := gorm.Open(sqlserver.New(sqlserver.Config{Conn: rollbackOnlyPool{sqlDB}}), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	require.NoError(t, db.Use(gormcrl.New(gormcrl.WithRetryExec(deadlockRules))))

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
