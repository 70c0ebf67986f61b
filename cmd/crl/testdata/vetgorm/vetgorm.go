// Package vetgorm is the GORM input of crl vet's test: each line marked
// "want" loses the retries of a *gorm.DB opened with gormcrl.
package vetgorm

import (
	"context"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"

	"github.com/crl-go/crl/gormcrl"
)

func open(dsn string) (*gorm.DB, error) {
	return gorm.Open(gormcrl.Open(postgres.Open(dsn)), &gorm.Config{})
}

func transfer(ctx context.Context, db *gorm.DB) error {
	return db.WithContext(ctx).Transaction(func(tx *gorm.DB) error { // want
		return tx.Exec("UPDATE accounts SET balance = balance - 1 WHERE id = 1").Error
	})
}

func retried(ctx context.Context, db *gorm.DB) error {
	return gormcrl.Transaction(db.WithContext(ctx), func(tx *gorm.DB) error {
		return tx.Exec("UPDATE accounts SET balance = balance - 1 WHERE id = 1").Error
	})
}
