package pgxcrl_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/conformance"
	"github.com/crl-go/crl/pgxcrl"
)

// pgxHandle is pgxcrl's side of the conformance suite; db is a plain
// database/sql pool on the same server for the suite's own set-up.
type pgxHandle struct {
	p  *pgxcrl.Pool
	db *sql.DB
}

func (h pgxHandle) Exec(ctx context.Context, query string, args ...any) error {
	_, err := h.p.Exec(ctx, query, args...)
	return err
}

func (h pgxHandle) ReadAll(ctx context.Context, query string) ([]int64, error) {
	rows, err := h.p.Query(ctx, query)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

func (h pgxHandle) ReadOne(ctx context.Context, query string) (int64, error) {
	var n int64
	err := h.p.QueryRow(ctx, query).Scan(&n)
	return n, err
}

func (h pgxHandle) InTx(ctx context.Context, fn func(conformance.Tx) error) error {
	return pgxcrl.RunInTx(ctx, h.p, pgx.TxOptions{}, func(tx pgx.Tx) error { return fn(pgxTx{ctx, tx}) })
}

func (h pgxHandle) DB() *sql.DB { return h.db }

func (h pgxHandle) Close() error {
	h.p.Close()
	return h.db.Close()
}

type pgxTx struct {
	ctx context.Context
	tx  pgx.Tx
}

func (t pgxTx) Exec(query string, args ...any) error {
	_, err := t.tx.Exec(t.ctx, query, args...)
	return err
}

func (t pgxTx) ReadAll(query string, args ...any) error {
	rows, err := t.tx.Query(t.ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
	}
	return rows.Err()
}

func (t pgxTx) ReadInt(query string, args ...any) (int64, error) {
	var n int64
	err := t.tx.QueryRow(t.ctx, query, args...).Scan(&n)
	return n, err
}

func (t pgxTx) Prepare(query string) (conformance.Prepared, error) {
	if _, err := t.tx.Prepare(t.ctx, query, query); err != nil {
		return nil, err
	}
	return pgxStmt{t, query}, nil
}

type pgxStmt struct {
	t    pgxTx
	name string
}

func (s pgxStmt) Exec(args ...any) error {
	_, err := s.t.tx.Exec(s.t.ctx, s.name, args...)
	return err
}

// TestConformance runs the part of the conformance suite that applies to
// pgxcrl: the checks on real PostgreSQL. The checks against mssqltest
// (SQL Server's protocol) and MariaDB skip: pgxcrl is pgx's.
func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T, driverName, dsn string, opts ...config.Option) (conformance.Handle, error) {
		if driverName != "pgx" {
			t.Skipf("pgxcrl runs on PostgreSQL; the suite asked for %s", driverName)
		}
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return nil, err
		}
		p, err := pgxcrl.Open(context.Background(), dsn, opts...)
		if err != nil {
			return nil, errors.Join(err, db.Close())
		}
		return pgxHandle{p: p, db: db}, nil
	})
}
