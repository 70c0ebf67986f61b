// Package clean uses crl's handles as they are meant to be used.
package clean

import (
	"context"

	"gorm.io/gorm"

	"github.com/crl-go/crl/gormcrl"
	"github.com/crl-go/crl/sqlxcrl"
)

func transfer(ctx context.Context, db *gorm.DB, x *sqlxcrl.DB) error {
	if err := gormcrl.Transaction(db.WithContext(ctx), func(tx *gorm.DB) error {
		return tx.Exec("UPDATE accounts SET balance = balance - 1 WHERE id = 1").Error
	}); err != nil {
		return err
	}
	x.DB.SetMaxOpenConns(4)
	return x.RunInTx(ctx, nil, func(tx *sqlxcrl.Tx) error {
		_, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = balance + 1 WHERE id = 2")
		return err
	})
}
