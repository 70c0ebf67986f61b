package pgxcrl_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/pgxcrl"
)

// dbtx is what the benchmark runs through: pgxpool.Pool and pgxcrl.Pool
// alike.
type dbtx interface {
	Exec(ctx context.Context, sql string, arguments ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// BenchmarkPgxcrl runs Exec, QueryRow and a two-statement transaction on
// the local PostgreSQL through raw pgxpool and through pgxcrl over the
// same server, side by side (one connection each, so that the pool's
// own contention is not measured).
func BenchmarkPgxcrl(b *testing.B) {
	dsn := withParams(postgresDSN(b), "pool_max_conns=1")
	ctx := context.Background()
	raw, err := pgxpool.New(ctx, dsn)
	require.NoError(b, err)
	defer raw.Close()
	p, err := pgxcrl.Open(ctx, dsn)
	require.NoError(b, err)
	defer p.Close()
	handles := []struct {
		name string
		db   dbtx
	}{{"pgxpool", raw}, {"pgxcrl", p}}
	var v int32
	for _, op := range []struct {
		name string
		run  func(db dbtx) error
	}{
		{"Exec", func(db dbtx) error { _, err := db.Exec(ctx, "SELECT 1"); return err }},
		{"QueryRow", func(db dbtx) error { return db.QueryRow(ctx, "SELECT 1").Scan(&v) }},
		{"Tx", func(db dbtx) error { return twoStatements(ctx, db) }},
	} {
		for _, h := range handles {
			b.Run(op.name+"/"+h.name, func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if err := op.run(h.db); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// twoStatements runs a transaction of two statements.
func twoStatements(ctx context.Context, db dbtx) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "SELECT 1"); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	if _, err := tx.Exec(ctx, "SELECT 2"); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}
