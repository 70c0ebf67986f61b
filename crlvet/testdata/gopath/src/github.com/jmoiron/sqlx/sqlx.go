// Package sqlx is a stub of github.com/jmoiron/sqlx.
package sqlx

import (
	"context"
	"database/sql"
)

type DB struct {
	*sql.DB
	Mapper any
}

type Tx struct{ *sql.Tx }

type Stmt struct{ *sql.Stmt }

type ExtContext interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func NewDb(db *sql.DB, driverName string) *DB { return &DB{DB: db} }

func (db *DB) Unsafe() *DB                                                    { return db }
func (db *DB) BeginTxx(ctx context.Context, opts *sql.TxOptions) (*Tx, error) { return nil, nil }
func (db *DB) Beginx() (*Tx, error)                                           { return nil, nil }
func (db *DB) MustBeginTx(ctx context.Context, opts *sql.TxOptions) *Tx       { return nil }
func (db *DB) MustBegin() *Tx                                                 { return nil }

func (db *DB) SelectContext(ctx context.Context, dest any, query string, args ...any) error {
	return nil
}

func (tx *Tx) SelectContext(ctx context.Context, dest any, query string, args ...any) error {
	return nil
}
