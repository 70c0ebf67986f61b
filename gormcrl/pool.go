package gormcrl

import (
	"database/sql"

	"gorm.io/gorm"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
)

// poolRetriesStatements reports whether a statement on pool may be retried on its
// own: not in a transaction (SQL Server rolls a deadlock victim's whole
// transaction back) and not on a *sql.Conn (bound to one connection whose
// state the caller owns; database/sql never retries one either).
func poolRetriesStatements(pool gorm.ConnPool) bool {
	switch pool.(type) {
	case nil, gorm.TxCommitter, *sql.Conn:
		return false
	}
	return true
}

// sqlDBOf returns the *sql.DB under pool, or nil.
func sqlDBOf(pool gorm.ConnPool) (*sql.DB, error) {
	switch p := pool.(type) {
	case *sql.DB:
		return p, nil
	case gorm.GetDBConnector:
		return p.GetDBConn()
	}
	// gorm.DB.DB knows how to find the *sql.DB of a *sql.Tx.
	return (&gorm.DB{Config: &gorm.Config{ConnPool: pool}}).DB()
}

// poolRuntime returns the Runtime of the pool under a *gorm.DB's pool
// when crl opened it.
func poolRuntime(pool gorm.ConnPool) (*config.Runtime, bool) {
	db, err := sqlDBOf(pool)
	if err != nil || db == nil {
		return nil, false
	}
	return crl.RuntimeOf(db)
}
