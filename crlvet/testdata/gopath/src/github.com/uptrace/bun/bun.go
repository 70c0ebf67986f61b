// Package bun is a stub of github.com/uptrace/bun.
package bun

import (
	"context"
	"database/sql"
)

type DB struct{ *sql.DB }

type Tx struct{ *sql.Tx }

type IDB interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (Tx, error)
	RunInTx(ctx context.Context, opts *sql.TxOptions, f func(ctx context.Context, tx Tx) error) error
}

func NewDB(sqldb *sql.DB, dialect any) *DB { return &DB{DB: sqldb} }

func (db *DB) BeginTx(ctx context.Context, opts *sql.TxOptions) (Tx, error) { return Tx{}, nil }
func (db *DB) Begin() (Tx, error)                                           { return Tx{}, nil }

func (db *DB) RunInTx(ctx context.Context, opts *sql.TxOptions, f func(ctx context.Context, tx Tx) error) error {
	return nil
}

func (tx Tx) Commit() error   { return nil }
func (tx Tx) Rollback() error { return nil }

func (tx Tx) RunInTx(ctx context.Context, opts *sql.TxOptions, f func(ctx context.Context, tx Tx) error) error {
	return nil
}
