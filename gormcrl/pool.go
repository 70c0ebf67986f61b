package gormcrl

import (
	"database/sql"

	"gorm.io/gorm"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
)

// poolRuntime returns the Runtime of the pool under a *gorm.DB's
// ConnPool (a *sql.DB, GORM's prepared-statement layer over one, a
// *sql.Tx of one) when crl opened it.
func poolRuntime(pool gorm.ConnPool) (*config.Runtime, bool) {
	var db *sql.DB
	var err error
	switch p := pool.(type) {
	case *sql.DB:
		db = p
	case gorm.GetDBConnector:
		db, err = p.GetDBConn()
	default:
		// gorm.DB.DB knows how to find the *sql.DB of a *sql.Tx.
		db, err = (&gorm.DB{Config: &gorm.Config{ConnPool: pool}}).DB()
	}
	if err != nil || db == nil {
		return nil, false
	}
	return crl.RuntimeOf(db)
}
