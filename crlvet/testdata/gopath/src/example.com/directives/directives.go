// Package directives silences findings with //crlvet:ignore.
package directives

import (
	"context"
	"database/sql"

	"github.com/crl-go/crl"
)

func open(dsn string) (*sql.DB, error) { return crl.Open("mysql", dsn) }

// inCallersTx is library code whose contract is one transaction of its own.
func inCallersTx(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil) //crlvet:ignore the caller retries the whole call with crl.Retry
	if err != nil {
		return err
	}
	//crlvet:ignore a migration, run once by hand
	tx2, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	tx3, err := db.BeginTx(ctx, nil) //crlvet:ignore // want `//crlvet:ignore needs a reason` `db.BeginTx begins a transaction`
	if err != nil {
		return err
	}
	//crlvet:ignore // want `//crlvet:ignore needs a reason`
	tx4, err := db.BeginTx(ctx, nil) // want `db.BeginTx begins a transaction`
	if err != nil {
		return err
	}
	res, _ := tx4.ExecContext(ctx, "INSERT INTO t (a) VALUES (1)")
	id, _ := res.LastInsertId()
	_, _ = tx4.ExecContext(ctx, "UPDATE t SET a = ?", id) // a statement after the generated value was read
	_ = tx3.Commit()
	_ = tx4.Commit()
	_ = tx2.Commit()
	return tx.Commit() // a directive applies to its own line and to the next one only when alone
}

func runs(ctx context.Context, db *sql.DB) (int, error) {
	n := 0
	err := crl.RunInTx(ctx, db, nil, func(tx *sql.Tx) error {
		n++ //crlvet:ignore counts the runs of the closure, on purpose
		_, err := tx.ExecContext(ctx, "UPDATE t SET a = 1")
		return err
	})
	return n, err
}

func notSilenced(ctx context.Context, db *sql.DB) error {
	_ = 1                           //crlvet:ignore a directive on another line silences nothing here
	tx, err := db.BeginTx(ctx, nil) // want `db.BeginTx begins a transaction`
	if err != nil {
		return err
	}
	res, _ := tx.ExecContext(ctx, "INSERT INTO t (a) VALUES (1)")
	id, _ := res.LastInsertId()
	_, _ = tx.ExecContext(ctx, "UPDATE t SET a = ?", id) // a statement after the generated value was read
	return tx.Commit()
}
