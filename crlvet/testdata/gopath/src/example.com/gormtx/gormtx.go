// Package gormtx begins GORM transactions on a handle of gormcrl's.
package gormtx

import (
	"context"

	"gorm.io/gorm"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/gormcrl"
)

type order struct{ ID int64 }

// repo embeds the *gorm.DB.
type repo struct{ *gorm.DB }

type alias = gorm.DB

func lost(ctx context.Context, db *gorm.DB, r repo, a *alias) error {
	_ = db.Transaction(func(tx *gorm.DB) error { // want `db.Transaction runs the closure once: .* use gormcrl.Transaction\(db, fn\)`
		return tx.Transaction(func(sp *gorm.DB) error { // a savepoint: the outer one is reported
			return sp.Create(&order{}).Error
		})
	})
	_ = r.Transaction(func(tx *gorm.DB) error { return nil }) // want `r.Transaction runs the closure once: .* gormcrl.Transaction\(r, fn\)`
	_ = a.Transaction(func(tx *gorm.DB) error { return nil }) // want `a.Transaction runs the closure once`
	txn := db.Transaction                                     // want `db.Transaction runs the closure once`
	_ = txn(func(tx *gorm.DB) error { return nil })
	_ = (*gorm.DB).Transaction(db, func(tx *gorm.DB) error { return nil }) // want `db.Transaction runs the closure once: .* gormcrl.Transaction\(db, fn\)`
	tx := r.Begin()                                                        // want `r.Begin starts a transaction that nothing re-runs: .* GORM reads back the generated ID .* gormcrl.Transaction\(r, fn\)`
	pool := r.ConnPool                                                     // want `r.ConnPool is the pool under GORM without gormcrl's statement loop`
	_ = pool
	_ = db.Statement.ConnPool // a Statement's, not the pool under GORM
	return tx.Commit().Error
}

func kept(ctx context.Context, db *gorm.DB) error {
	if err := gormcrl.Transaction(db.WithContext(ctx), func(tx *gorm.DB) error {
		return tx.Transaction(func(sp *gorm.DB) error { return sp.Create(&order{}).Error })
	}); err != nil {
		return err
	}
	if err := gormcrl.Transaction(db, saveWithSavepoint); err != nil {
		return err
	}
	// GORM's own transaction re-run whole by crl.Retry.
	return crl.Retry(ctx, func(ctx context.Context) error {
		return db.WithContext(ctx).Transaction(func(tx *gorm.DB) error { return tx.Create(&order{}).Error })
	})
}

// saveWithSavepoint is given to gormcrl.Transaction by name: its nested
// Transaction is a savepoint of the retried transaction.
func saveWithSavepoint(tx *gorm.DB) error {
	return tx.Transaction(func(sp *gorm.DB) error { return sp.Create(&order{}).Error })
}
