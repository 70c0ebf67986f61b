// Package sqlxcrl is a stub of crl's sqlx wrapper.
package sqlxcrl

import (
	"context"
	"database/sql"

	"github.com/jmoiron/sqlx"
)

type Option func()

type DB struct{ *sqlx.DB }

type Tx struct{ *sqlx.Tx }

type Stmt struct{ *sqlx.Stmt }

func NewDb(db *sql.DB, driverName string, opts ...Option) *DB { return nil }

func WrapDB(db *sql.DB, driverName string, opts ...Option) (*DB, error) { return nil, nil }

func NewDbE(db *sql.DB, driverName string, opts ...Option) (*DB, error) { return nil, nil }

func RunInTxx(ctx context.Context, db *sqlx.DB, opts *sql.TxOptions, fn func(*sqlx.Tx) error) error {
	return nil
}

func (db *DB) RunInTx(ctx context.Context, opts *sql.TxOptions, fn func(tx *Tx) error) error {
	return nil
}

func (db *DB) BeginTxx(ctx context.Context, opts *sql.TxOptions) (*Tx, error) { return nil, nil }
func (db *DB) Beginx() (*Tx, error)                                           { return nil, nil }
func (db *DB) MustBeginTx(ctx context.Context, opts *sql.TxOptions) *Tx       { return nil }
func (db *DB) MustBegin() *Tx                                                 { return nil }

func (db *DB) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return nil, nil
}

func (tx *Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return nil, nil
}

func (tx *Tx) SelectContext(ctx context.Context, dest any, query string, args ...any) error {
	return nil
}
