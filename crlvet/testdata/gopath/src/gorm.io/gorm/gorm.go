// Package gorm is a stub of gorm.io/gorm: a *DB gets ConnPool from its
// embedded *Config, as GORM's does.
package gorm

import (
	"context"
	"database/sql"
)

type ConnPool interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

type Config struct{ ConnPool ConnPool }

type Statement struct{ ConnPool ConnPool }

type DB struct {
	*Config
	Error     error
	Statement *Statement
}

func (db *DB) Transaction(fc func(tx *DB) error, opts ...*sql.TxOptions) error { return nil }
func (db *DB) Begin(opts ...*sql.TxOptions) *DB                                { return db }
func (db *DB) Commit() *DB                                                     { return db }
func (db *DB) Rollback() *DB                                                   { return db }
func (db *DB) SavePoint(name string) *DB                                       { return db }
func (db *DB) RollbackTo(name string) *DB                                      { return db }
func (db *DB) WithContext(ctx context.Context) *DB                             { return db }
func (db *DB) Create(value any) *DB                                            { return db }
func (db *DB) Exec(sql string, values ...any) *DB                              { return db }
func (db *DB) DB() (*sql.DB, error)                                            { return nil, nil }
