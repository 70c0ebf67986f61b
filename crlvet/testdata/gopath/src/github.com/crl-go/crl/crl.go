// Package crl is a stub of crl's root package: the signatures crlvet
// knows it by.
package crl

import (
	"context"
	"database/sql"
	"database/sql/driver"
)

type Option func()

func Open(driverName, dsn string, opts ...Option) (*sql.DB, error) { return nil, nil }

func OpenDB(c driver.Connector, driverName string, opts ...Option) (*sql.DB, error) {
	return nil, nil
}

func Register(driverName string, opts ...Option) (string, error) { return "", nil }

func RunInTx(ctx context.Context, db *sql.DB, opts *sql.TxOptions, fn func(*sql.Tx) error) error {
	return nil
}

func Retry(ctx context.Context, fn func(ctx context.Context) error) error { return nil }

func RuntimeOf(db *sql.DB) (any, bool) { return nil, false }
