package gormcrl_test

import (
	"context"
	"testing"

	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/gormcrl"
)

// gormHandle is gormcrl's side of the conformance suite.
type gormHandle struct{ db *gorm.DB }

func (h gormHandle) Exec(ctx context.Context, query string) error {
	return h.db.WithContext(ctx).Exec(query).Error
}

func (h gormHandle) InTx(ctx context.Context, fn func(exec func(string) error) error) error {
	return gormcrl.Transaction(h.db.WithContext(ctx), func(tx *gorm.DB) error {
		return fn(func(q string) error { return tx.Exec(q).Error })
	})
}

func (h gormHandle) Close() error {
	sqlDB, err := h.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

func TestConformance(t *testing.T) {
	coretest.Conformance(t, func(t *testing.T, dsn string, clock core.Clock) (coretest.Handle, error) {
		db, err := gorm.Open(gormcrl.Open(sqlserver.Open(dsn), config.WithClock(clock)), &gorm.Config{Logger: logger.Discard})
		if err != nil {
			return nil, err
		}
		return gormHandle{db}, nil
	})
}
