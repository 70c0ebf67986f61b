// Package gormplain uses GORM without importing gormcrl: its handle may
// come from anywhere, so only -gormall checks it.
package gormplain

import "gorm.io/gorm"

func save(db *gorm.DB) error {
	return db.Transaction(func(tx *gorm.DB) error { // want `db.Transaction runs the closure once`
		return tx.Exec("UPDATE t SET a = 1").Error
	})
}
