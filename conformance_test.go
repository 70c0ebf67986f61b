package crl_test

import (
	"context"
	"database/sql"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/microsoft/go-mssqldb"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/conformance"
)

// poolHandle is the driver layer's side of the conformance suite: a plain
// *sql.DB that crl.Open opened, its statements run with database/sql's own
// methods and its transactions with crl.RunInTx.
type poolHandle struct{ db *sql.DB }

func (h poolHandle) Exec(ctx context.Context, query string, args ...any) error {
	_, err := h.db.ExecContext(ctx, query, args...)
	return err
}

func (h poolHandle) ReadAll(ctx context.Context, query string) ([]int64, error) {
	rows, err := h.db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ns []int64
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		ns = append(ns, n)
	}
	return ns, rows.Err()
}

func (h poolHandle) ReadOne(ctx context.Context, query string) (int64, error) {
	var n int64
	err := h.db.QueryRowContext(ctx, query).Scan(&n)
	return n, err
}

func (h poolHandle) InTx(ctx context.Context, fn func(conformance.Tx) error) error {
	return crl.RunInTx(ctx, h.db, nil, func(tx *sql.Tx) error { return fn(poolTx{ctx, tx}) })
}

func (h poolHandle) DB() *sql.DB  { return h.db }
func (h poolHandle) Close() error { return h.db.Close() }

// poolTx is a *sql.Tx of crl.RunInTx; it reads, and prepares statements.
type poolTx struct {
	ctx context.Context
	tx  *sql.Tx
}

var (
	_ conformance.ReadingTx   = poolTx{}
	_ conformance.PreparingTx = poolTx{}
)

func (t poolTx) Exec(query string, args ...any) error {
	_, err := t.tx.ExecContext(t.ctx, query, args...)
	return err
}

func (t poolTx) ReadInt(query string, args ...any) (int64, error) {
	var n int64
	err := t.tx.QueryRowContext(t.ctx, query, args...).Scan(&n)
	return n, err
}

func (t poolTx) ReadAll(query string, args ...any) error {
	rows, err := t.tx.QueryContext(t.ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
	}
	return rows.Err()
}

func (t poolTx) Prepare(query string) (conformance.Prepared, error) {
	s, err := t.tx.PrepareContext(t.ctx, query)
	if err != nil {
		return nil, err
	}
	return poolStmt{t.ctx, s}, nil
}

type poolStmt struct {
	ctx context.Context
	s   *sql.Stmt
}

func (s poolStmt) Exec(args ...any) error {
	_, err := s.s.ExecContext(s.ctx, args...)
	return err
}

// TestConformance runs the conformance suite on pools crl.Open opened,
// through database/sql's own types and crl.RunInTx.
func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T, driverName, dsn string, opts ...config.Option) (conformance.Handle, error) {
		db, err := crl.Open(driverName, dsn, opts...)
		if err != nil {
			return nil, err
		}
		if err := db.PingContext(context.Background()); err != nil {
			_ = db.Close()
			return nil, err
		}
		return poolHandle{db}, nil
	})
}
