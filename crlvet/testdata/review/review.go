// Package review holds the review's false positives and negatives of
// crl vet, against the real sqlxcrl, gormcrl and GORM: the lines with a
// "want" comment are reported; the others are not.
package review

import (
	"context"

	"gorm.io/gorm"

	"github.com/crl-go/crl/gormcrl"
	"github.com/crl-go/crl/sqlxcrl"
)

type order struct{ ID int64 }

// repo embeds the *gorm.DB: its Transaction is GORM's.
type repo struct{ *gorm.DB }

func sqlxCases(ctx context.Context, db *sqlxcrl.DB) error {
	again := sqlxcrl.NewDb(db.DB.DB, "sqlserver") // wraps the pool again: fine
	wrapped, err := sqlxcrl.WrapDB(db.DB.DB, "sqlserver")
	if err != nil {
		return err
	}
	_, _ = again, wrapped
	var n []int
	if err := db.DB.Unsafe().SelectContext(ctx, &n, "SELECT 1"); err != nil { // want `db.DB is the embedded \*sqlx.DB of a \*sqlxcrl.DB`
		return err
	}
	u := db.DB.Unsafe() // want `db.DB is the embedded \*sqlx.DB`
	_ = u
	return nil
}

func gormCases(ctx context.Context, db *gorm.DB, r repo) error {
	_ = r.Transaction(func(tx *gorm.DB) error { return nil }) // want `r.Transaction runs the closure once: .* gormcrl.Transaction\(r, fn\)`
	txn := db.Transaction                                     // want `db.Transaction runs the closure once`
	_ = txn(func(tx *gorm.DB) error { return nil })
	_ = (*gorm.DB).Transaction(db, func(tx *gorm.DB) error { return nil }) // want `db.Transaction runs the closure once: .* gormcrl.Transaction\(db, fn\)`
	return gormcrl.Transaction(db.WithContext(ctx), saveWithSavepoint)
}

// saveWithSavepoint is given to gormcrl.Transaction by name: its nested
// Transaction is a savepoint of the retried transaction.
func saveWithSavepoint(tx *gorm.DB) error {
	return tx.Transaction(func(sp *gorm.DB) error { return sp.Create(&order{}).Error })
}
