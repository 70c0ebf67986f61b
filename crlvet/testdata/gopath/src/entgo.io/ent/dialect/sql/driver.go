// Package sql is a stub of entgo.io/ent/dialect/sql.
package sql

import (
	"context"
	"database/sql"

	"entgo.io/ent/dialect"
)

type TxOptions = sql.TxOptions

type Driver struct{ db *sql.DB }

func OpenDB(driver string, db *sql.DB) *Driver { return &Driver{db: db} }

func (d *Driver) Tx(ctx context.Context) (dialect.Tx, error) { return nil, nil }

func (d *Driver) BeginTx(ctx context.Context, opts *TxOptions) (dialect.Tx, error) {
	return nil, nil
}
