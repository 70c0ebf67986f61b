package gormcrl_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/conformance"
	"github.com/crl-go/crl/gormcrl"
)

// gormHandle is gormcrl's side of the conformance suite.
type gormHandle struct{ db *gorm.DB }

func (h gormHandle) Exec(ctx context.Context, query string, args ...any) error {
	return h.db.WithContext(ctx).Exec(query, args...).Error
}

func (h gormHandle) ReadAll(ctx context.Context, query string) ([]int64, error) {
	var ns []int64
	err := h.db.WithContext(ctx).Raw(query).Find(&ns).Error
	return ns, err
}

func (h gormHandle) ReadOne(ctx context.Context, query string) (int64, error) {
	var n int64
	err := h.db.WithContext(ctx).Raw(query).Find(&n).Error
	return n, err
}

func (h gormHandle) InTx(ctx context.Context, fn func(conformance.Tx) error) error {
	return gormcrl.Transaction(h.db.WithContext(ctx), func(tx *gorm.DB) error { return fn(gormTx{tx}) })
}

func (h gormHandle) DB() *sql.DB {
	sqlDB, _ := h.db.DB() // Open's pool is a *sql.DB
	return sqlDB
}

func (h gormHandle) Close() error { return h.DB().Close() }

type gormTx struct{ tx *gorm.DB }

func (t gormTx) Exec(query string, args ...any) error { return t.tx.Exec(query, args...).Error }

func (t gormTx) ReadInt(query string, args ...any) (int64, error) {
	var n int64
	err := t.tx.Raw(query, args...).Find(&n).Error
	return n, err
}

func (t gormTx) ReadAll(query string, args ...any) error {
	rows, err := t.tx.Raw(query, args...).Rows()
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
	}
	return rows.Err()
}

// Prepare returns the statement in GORM's PrepareStmt mode: the PREPARE
// is sent with the first Exec.
func (t gormTx) Prepare(query string) (conformance.Prepared, error) {
	return gormStmt{t.tx.Session(&gorm.Session{PrepareStmt: true}), query}, nil
}

type gormStmt struct {
	tx    *gorm.DB
	query string
}

func (s gormStmt) Exec(args ...any) error { return s.tx.Exec(s.query, args...).Error }

// dialectors are the GORM dialectors of the drivers the suite names.
var dialectors = map[string]func(string) gorm.Dialector{
	"sqlserver": sqlserver.Open,
	"mysql":     mysql.Open,
	"pgx":       postgres.Open,
}

// openGorm opens GORM through gormcrl.Open on driverName's dialector.
func openGorm(driverName, dsn string, opts ...config.Option) (*gorm.DB, error) {
	dialector, ok := dialectors[driverName]
	if !ok {
		return nil, fmt.Errorf("no GORM dialector for driver %q", driverName)
	}
	return gorm.Open(gormcrl.Open(dialector(dsn), opts...), &gorm.Config{Logger: logger.Discard})
}

func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T, driverName, dsn string, opts ...config.Option) (conformance.Handle, error) {
		db, err := openGorm(driverName, dsn, opts...)
		if err != nil {
			return nil, err
		}
		return gormHandle{db}, nil
	})
}
