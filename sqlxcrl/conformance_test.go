package sqlxcrl_test

import (
	"context"
	"database/sql"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/conformance"
	"github.com/crl-go/crl/sqlxcrl"
)

// sqlxHandle is sqlxcrl's side of the conformance suite.
type sqlxHandle struct{ db *sqlxcrl.DB }

func (h sqlxHandle) Exec(ctx context.Context, query string, args ...any) error {
	_, err := h.db.ExecContext(ctx, query, args...)
	return err
}

func (h sqlxHandle) ReadAll(ctx context.Context, query string) ([]int64, error) {
	var ns []int64
	err := h.db.SelectContext(ctx, &ns, query)
	return ns, err
}

func (h sqlxHandle) ReadOne(ctx context.Context, query string) (int64, error) {
	var n int64
	err := h.db.GetContext(ctx, &n, query)
	return n, err
}

func (h sqlxHandle) InTx(ctx context.Context, fn func(conformance.Tx) error) error {
	return h.db.RunInTx(ctx, nil, func(tx *sqlxcrl.Tx) error { return fn(sqlxTx{ctx, tx}) })
}

func (h sqlxHandle) DB() *sql.DB  { return h.db.DB.DB }
func (h sqlxHandle) Close() error { return h.db.Close() }

type sqlxTx struct {
	ctx context.Context
	tx  *sqlxcrl.Tx
}

func (t sqlxTx) ReadInt(query string, args ...any) (int64, error) {
	var n int64
	err := t.tx.GetContext(t.ctx, &n, query, args...)
	return n, err
}

func (t sqlxTx) Exec(query string, args ...any) error {
	_, err := t.tx.ExecContext(t.ctx, query, args...)
	return err
}

func (t sqlxTx) ReadAll(query string, args ...any) error {
	rows, err := t.tx.QueryxContext(t.ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
	}
	return rows.Err()
}

func (t sqlxTx) Prepare(query string) (conformance.Prepared, error) {
	s, err := t.tx.PreparexContext(t.ctx, query)
	if err != nil {
		return nil, err
	}
	return sqlxStmt{t.ctx, s}, nil
}

type sqlxStmt struct {
	ctx context.Context
	s   *sqlxcrl.Stmt
}

func (s sqlxStmt) Exec(args ...any) error {
	_, err := s.s.ExecContext(s.ctx, args...)
	return err
}

func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T, driverName, dsn string, opts ...config.Option) (conformance.Handle, error) {
		db, err := sqlxcrl.Connect(driverName, dsn, opts...)
		if err != nil {
			return nil, err
		}
		return sqlxHandle{db}, nil
	})
}
