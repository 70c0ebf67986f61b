// Package adoption holds two shapes met in real adoptions of crl: a
// transaction begun in a helper method that a unit calls, reported as the
// inline form is; and GORM calls inside crl.Retry's function on a
// *gorm.DB without its context, which the unit does not see, so it
// retries nothing. Each line marked want is reported; the others are not.
package adoption

import (
	"context"

	"gorm.io/gorm"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/gormcrl"
)

var _ = gormcrl.New

type order struct{ ID, Total int64 }

type model struct {
	db *gorm.DB
	tx *gorm.DB
}

func (m *model) begin() { m.tx = m.db.Begin() } // want `m.db.Begin inside crl.Retry's function runs without its context \(m.db, not m.db.WithContext\(ctx\)\): crl records nothing of it in the unit, so the unit retries nothing; write m.db.WithContext\(ctx\).Begin, or run the work in gormcrl.Transaction\(m.db.WithContext\(ctx\), fn\), which works on any pool`

func helperForm(ctx context.Context, m *model) error {
	return crl.Retry(ctx, func(ctx context.Context) error {
		m.begin()
		if err := m.tx.Create(&order{Total: 1}).Error; err != nil {
			m.tx.Rollback()
			return err
		}
		return m.tx.Commit().Error
	})
}

func inlineForm(ctx context.Context, m *model) error {
	return crl.Retry(ctx, func(ctx context.Context) error {
		m.tx = m.db.Begin() // want `m.db.Begin inside crl.Retry's function runs without its context`
		if err := m.tx.Create(&order{Total: 1}).Error; err != nil {
			m.tx.Rollback()
			return err
		}
		return m.tx.Commit().Error
	})
}

func noContext(ctx context.Context, db *gorm.DB) error {
	return crl.Retry(ctx, func(ctx context.Context) error {
		return db.Create(&order{Total: 2}).Error // want `db.Create inside crl.Retry's function runs without its context .* write db.WithContext\(ctx\).Create`
	})
}

func withContext(ctx context.Context, db *gorm.DB) error {
	return crl.Retry(ctx, func(ctx context.Context) error {
		return db.WithContext(ctx).Create(&order{Total: 2}).Error
	})
}

// The *gorm.DB a transaction hands its closure carries the context it was
// begun with; a parameter may have been given it by the caller.
func trusted(ctx context.Context, db *gorm.DB) error {
	return crl.Retry(ctx, func(ctx context.Context) error {
		g := db.WithContext(ctx)
		if err := g.Create(&order{Total: 3}).Error; err != nil {
			return err
		}
		return g.Transaction(func(tx *gorm.DB) error {
			return save(tx, &order{Total: 4})
		})
	})
}

func save(db *gorm.DB, o *order) error { return db.Save(o).Error }
