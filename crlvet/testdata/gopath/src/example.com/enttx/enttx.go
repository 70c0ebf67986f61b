// Package enttx begins ent transactions, on a generated client and on
// ent's dialect/sql driver, over a pool crl opened.
package enttx

import (
	"context"
	"database/sql"

	entsql "entgo.io/ent/dialect/sql"
	"example.com/shop/ent"

	"github.com/crl-go/crl"
)

func open(dsn string) (*entsql.Driver, error) {
	db, err := crl.Open("pgx", dsn)
	return entsql.OpenDB("postgres", db), err
}

func lost(ctx context.Context, client *ent.Client, drv *entsql.Driver) error {
	tx, err := client.Tx(ctx) // want `client.Tx begins an ent transaction that nothing re-runs: crl's driver layer replays it only while .* ent reads back the generated ID .* crl.Retry\(ctx, func\(ctx context.Context\) error { tx, err := client.Tx\(ctx\); …; return tx.Commit\(\) }\)`
	if err != nil {
		return err
	}
	if _, err := tx.User.Add(ctx, "a"); err != nil {
		return tx.Rollback()
	}
	_ = tx.Commit()
	tx, _ = client.BeginTx(ctx, &sql.TxOptions{}) // want `client.BeginTx begins an ent transaction`
	_ = tx.Commit()
	dtx, _ := drv.Tx(ctx) // want `drv.Tx begins an ent transaction`
	return dtx.Commit()
}

func kept(ctx context.Context, client *ent.Client) error {
	var id int
	err := crl.Retry(ctx, func(ctx context.Context) error {
		tx, err := client.Tx(ctx)
		if err != nil {
			return err
		}
		n, err := tx.User.Add(ctx, "a")
		if err != nil {
			_ = tx.Rollback() // ent's own transaction: crl.Retry gives none
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		id = n // assigned after success
		return nil
	})
	_ = id
	return err
}

// notEnt has a Tx method that is not an ent client's.
type notEnt struct{}

func (notEnt) Tx(ctx context.Context) (int, error) { return 0, nil }

func other(ctx context.Context) { _, _ = notEnt{}.Tx(ctx) }
