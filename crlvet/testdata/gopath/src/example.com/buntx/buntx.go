// Package buntx begins bun transactions over a pool crl opened.
package buntx

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/crl-go/crl"
)

func open(dsn string) (*bun.DB, error) {
	db, err := crl.Open("pgx", dsn)
	return bun.NewDB(db, nil), err
}

func lost(ctx context.Context, db *bun.DB, idb bun.IDB) error {
	tx, err := db.BeginTx(ctx, nil) // want `db.BeginTx begins a bun transaction that nothing re-runs: crl's driver layer replays it only while .* bun reads back the generated key .* crl.Retry\(ctx, func\(ctx context.Context\) error { return db.RunInTx\(ctx, opts, fn\) }\)`
	if err != nil {
		return err
	}
	_ = tx.Commit()
	tx, _ = db.Begin() // want `db.Begin begins a bun transaction`
	_ = tx.Rollback()
	_ = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { // want `db.RunInTx runs fn once: .* crl.Retry\(ctx, func\(ctx context.Context\) error { return db.RunInTx\(ctx, opts, fn\) }\)`
		return tx.RunInTx(ctx, nil, func(ctx context.Context, sp bun.Tx) error { return nil }) // a savepoint
	})
	_, _ = db.DB.BeginTx(ctx, nil)                                                          // replayed by the driver layer: reads no generated value
	return idb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return nil }) // want `idb.RunInTx runs fn once`
}

func kept(ctx context.Context, db *bun.DB) error {
	return crl.Retry(ctx, func(ctx context.Context) error {
		return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			_, err := tx.ExecContext(ctx, "UPDATE t SET a = 1")
			return err
		})
	})
}
