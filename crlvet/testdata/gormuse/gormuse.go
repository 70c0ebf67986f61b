// Package gormuse opens GORM with gormcrl and then loses the retries:
// each line marked want does; the others do not.
package gormuse

import (
	"context"

	"gorm.io/driver/mysql"
	"gorm.io/gorm"

	"github.com/crl-go/crl/gormcrl"
)

type order struct {
	ID    int64
	Total int64
}

func open(dsn string) (*gorm.DB, error) {
	return gorm.Open(gormcrl.Open(mysql.Open(dsn)), &gorm.Config{})
}

func lost(ctx context.Context, db *gorm.DB) error {
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error { // want `db.WithContext\(ctx\).Transaction runs the closure once: .* use gormcrl.Transaction\(db.WithContext\(ctx\), fn\)`
		return tx.Transaction(func(sp *gorm.DB) error { // a savepoint: the outer one is reported
			return sp.Create(&order{Total: 1}).Error
		})
	})
	if err != nil {
		return err
	}

	tx := db.Begin() // want `db.Begin starts a transaction that nothing re-runs: .* GORM reads back the generated ID .* gormcrl.Transaction\(db, fn\)`
	if err := tx.Create(&order{Total: 2}).Error; err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit().Error; err != nil {
		return err
	}

	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	sqlDB.SetMaxOpenConns(8)
	_ = sqlDB.Ping()
	if _, err := sqlDB.ExecContext(ctx, "DELETE FROM orders"); err != nil { // want `sqlDB.ExecContext runs on the \*sql.DB of db.DB\(\), outside GORM: it is not retried`
		return err
	}
	var n int
	if err := sqlDB.QueryRow("SELECT COUNT(*) FROM orders").Scan(&n); err != nil { // want `sqlDB.QueryRow runs on the \*sql.DB of db.DB\(\)`
		return err
	}

	pool := db.ConnPool // want `db.ConnPool is the pool under GORM without gormcrl's statement loop: .* gormcrl.Transaction\(db, fn\)`
	_, err = pool.ExecContext(ctx, "DELETE FROM orders")
	return err
}

func kept(ctx context.Context, db *gorm.DB) error {
	err := gormcrl.Transaction(db.WithContext(ctx), func(tx *gorm.DB) error {
		if err := tx.Create(&order{Total: 3}).Error; err != nil {
			return err
		}
		return tx.Transaction(func(sp *gorm.DB) error { // a savepoint of the retried transaction
			return sp.Model(&order{}).Where("id = ?", 1).Update("total", 4).Error
		})
	})
	if err != nil {
		return err
	}
	db.ConnPool = db.Statement.ConnPool // assigning takes nothing out
	return db.WithContext(ctx).Exec("DELETE FROM orders WHERE total = ?", 0).Error
}
