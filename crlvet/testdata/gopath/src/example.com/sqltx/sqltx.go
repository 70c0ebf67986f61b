// Package sqltx begins database/sql transactions on a pool crl opened.
package sqltx

import (
	"context"
	"database/sql"

	"github.com/crl-go/crl"
)

func open(dsn string) (*sql.DB, error) { return crl.Open("sqlserver", dsn) }

// replayed begins transactions that the driver layer replays: they read
// no generated value, so a replay verifies everything they saw.
func replayed(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
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
	tx2, err := db.Begin()
	if err != nil {
		return err
	}
	res, err := tx2.ExecContext(ctx, "INSERT INTO t (a) VALUES (1)")
	if err != nil {
		return err
	}
	if _, err := res.LastInsertId(); err != nil { // read last: nothing runs after it but COMMIT
		return err
	}
	return tx2.Commit()
}

// lost begins transactions that read a generated value and then run
// another statement: a replay cannot verify them.
func lost(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil) // want `db.BeginTx begins a transaction that reads a generated value \(LastInsertId\) and then runs another statement: .* use crl.RunInTx\(ctx, db, opts, fn\), which re-runs fn on a fresh \*sql.Tx`
	if err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, "INSERT INTO orders (item) VALUES ('pen')")
	if err != nil {
		return err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO lines (order_id) VALUES (?)", id); err != nil {
		return err
	}
	return tx.Commit()
}

// lostReturning reads the ID an INSERT … RETURNING hands back.
func lostReturning(ctx context.Context, db *sql.DB) error {
	tx, err := (*sql.DB).Begin(db) // want `db.Begin begins a transaction that reads a generated value \(QueryRowContext … RETURNING\) .* crl.RunInTx\(ctx, db, opts, fn\)`
	if err != nil {
		return err
	}
	var id int64
	if err := tx.QueryRowContext(ctx, "INSERT INTO orders (item) VALUES ('pen') RETURNING id").Scan(&id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO lines (order_id) VALUES ($1)", id); err != nil {
		return err
	}
	return tx.Commit()
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
