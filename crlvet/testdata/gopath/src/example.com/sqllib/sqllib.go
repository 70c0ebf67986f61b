// Package sqllib is library code that begins a transaction on a *sql.DB
// it is given and imports no crl package: checked with -all only.
package sqllib

import (
	"context"
	"database/sql"
)

func save(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil) // want `db.BeginTx begins a transaction that nothing re-runs`
	if err != nil {
		return err
	}
	return tx.Commit()
}
