// Package sqllib is library code that begins a transaction on a *sql.DB
// it is given and imports no crl package: checked with -all only.
package sqllib

import (
	"context"
	"database/sql"
)

func save(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil) // want `db.BeginTx begins a transaction that reads a generated value \(LastInsertId\) and then runs another statement`
	if err != nil {
		return err
	}
	res, _ := tx.ExecContext(ctx, "INSERT INTO t (a) VALUES (1)")
	id, _ := res.LastInsertId()
	_, _ = tx.ExecContext(ctx, "UPDATE t SET a = ?", id) // a statement after the generated value was read
	return tx.Commit()
}
