// Package sqlxtx begins sqlx transactions: on a *sqlxcrl.DB (always
// checked) and on a *sqlx.DB over a pool crl opened.
package sqlxtx

import (
	"context"
	"database/sql"

	"github.com/jmoiron/sqlx"

	"github.com/crl-go/crl/sqlxcrl"
)

func lostPlain(ctx context.Context, db *sqlx.DB) error {
	tx, err := db.Beginx() // want `db.Beginx begins a transaction that reads a generated value \(LastInsertId\) and then runs another statement: .* use sqlxcrl.RunInTxx\(ctx, db, opts, fn\), which re-runs fn on a fresh \*sqlx.Tx`
	if err != nil {
		return err
	}
	_ = tx.Commit()
	tx = db.MustBegin()                // want `db.MustBegin begins a transaction .* sqlxcrl.RunInTxx`
	tx, _ = db.BeginTxx(ctx, nil)      // want `db.BeginTxx begins a transaction .* sqlxcrl.RunInTxx`
	tx = db.MustBeginTx(ctx, nil)      // want `db.MustBeginTx begins a transaction .* sqlxcrl.RunInTxx`
	raw, _ := db.BeginTx(ctx, nil)     // want `db.BeginTx begins a transaction .* sqlxcrl.RunInTxx\(ctx, db, opts, fn\)`
	raw2, _ := db.DB.BeginTx(ctx, nil) // want `db.DB.BeginTx begins a transaction .* crl.RunInTx\(ctx, db.DB, opts, fn\)`
	res, _ := raw.ExecContext(ctx, "INSERT INTO t (a) VALUES (1)")
	id, _ := res.LastInsertId()
	_, _ = raw2.ExecContext(ctx, "UPDATE t SET a = ?", id) // a statement after the generated value was read
	_, _ = raw.Commit(), raw2.Commit()
	return tx.Commit()
}

func lostWrapped(ctx context.Context, db *sqlxcrl.DB) error {
	tx, err := db.Beginx() // want `db.Beginx begins a transaction that reads a generated value \(LastInsertId\) and then runs another statement: .* use db.RunInTx\(ctx, opts, fn\), which re-runs fn on a fresh \*sqlxcrl.Tx`
	if err != nil {
		return err
	}
	_ = tx.Commit()
	tx = db.MustBegin()            // want `db.MustBegin begins a transaction .* db.RunInTx\(ctx, opts, fn\)`
	tx, _ = db.BeginTxx(ctx, nil)  // want `db.BeginTxx begins a transaction .* db.RunInTx`
	raw, _ := db.BeginTx(ctx, nil) // want `db.BeginTx begins a transaction .* db.RunInTx\(ctx, opts, fn\)`
	res, _ := raw.ExecContext(ctx, "INSERT INTO t (a) VALUES (1)")
	id, _ := res.LastInsertId()
	_, _ = raw.ExecContext(ctx, "UPDATE t SET a = ?", id)
	_ = raw.Commit()
	return tx.Commit()
}

// replayedWrapped's transaction reads no generated value: the driver
// layer's replay verifies it, so it is no finding.
func replayedWrapped(ctx context.Context, db *sqlxcrl.DB) error {
	tx, err := db.Beginx()
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE t SET a = a + 1"); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func kept(ctx context.Context, db *sqlxcrl.DB, plain *sqlx.DB) error {
	if err := db.RunInTx(ctx, nil, func(tx *sqlxcrl.Tx) error {
		_, err := tx.ExecContext(ctx, "UPDATE t SET a = 1")
		return err
	}); err != nil {
		return err
	}
	return sqlxcrl.RunInTxx(ctx, plain, &sql.TxOptions{}, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, "UPDATE t SET a = 1")
		return err
	})
}
