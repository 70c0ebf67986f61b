// Package sqltx begins database/sql transactions on a pool crl opened.
package sqltx

import (
	"context"
	"database/sql"

	"github.com/crl-go/crl"
)

func open(dsn string) (*sql.DB, error) { return crl.Open("sqlserver", dsn) }

func lost(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil) // want `db.BeginTx begins a transaction that nothing re-runs: .* use crl.RunInTx\(ctx, db, opts, fn\), which re-runs fn on a fresh \*sql.Tx`
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE t SET a = 1"); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	tx2, err := db.Begin() // want `db.Begin begins a transaction that nothing re-runs`
	if err != nil {
		return err
	}
	begin := db.BeginTx // want `db.BeginTx begins a transaction`
	_, _ = begin(ctx, nil)
	_, _ = (*sql.DB).Begin(db) // want `db.Begin begins a transaction .* crl.RunInTx\(ctx, db, opts, fn\)`
	return tx2.Commit()
}

// kept re-runs each transaction whole.
func kept(ctx context.Context, db *sql.DB) error {
	if err := crl.RunInTx(ctx, db, nil, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "UPDATE t SET a = 1")
		return err
	}); err != nil {
		return err
	}
	if err := crl.Retry(ctx, func(ctx context.Context) error {
		tx, err := db.BeginTx(ctx, nil) // re-run whole by crl.Retry
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, "UPDATE t SET a = 2"); err != nil {
			return err
		}
		return tx.Commit()
	}); err != nil {
		return err
	}
	return crl.Retry(ctx, func(ctx context.Context) error { return transfer(ctx, db) })
}

// transfer is called inside crl.Retry's closure: its transaction is
// re-run with it.
func transfer(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	return tx.Commit()
}

type store struct{ db *sql.DB }

// save is given to crl.Retry as a method value.
func (s *store) save(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	return tx.Commit()
}

func (s *store) run(ctx context.Context) error { return crl.Retry(ctx, s.save) }
