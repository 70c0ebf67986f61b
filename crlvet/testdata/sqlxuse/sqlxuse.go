// Package sqlxuse takes the embedded sqlx handles out of sqlxcrl handles:
// each line marked want loses retries; the others do not.
package sqlxuse

import (
	"context"
	"database/sql"

	"github.com/jmoiron/sqlx"

	"github.com/crl-go/crl/sqlxcrl"
)

func takesSqlx(q *sqlx.DB) error { _, err := q.Exec("UPDATE t SET a = 1"); return err }

func takesExt(ctx context.Context, q sqlx.ExtContext) error {
	_, err := q.ExecContext(ctx, "UPDATE t SET a = 1")
	return err
}

func takesSQL(*sql.DB) {}

func use(ctx context.Context, db *sqlxcrl.DB, tx *sqlxcrl.Tx, st *sqlxcrl.Stmt) error {
	_ = takesSqlx(db.DB)                      // want `db.DB is the embedded \*sqlx.DB of a \*sqlxcrl.DB: statements run on it are not retried; pass the \*sqlxcrl.DB itself`
	takesSQL(db.DB.DB)                        // want `db.DB is the embedded \*sqlx.DB`
	_, _ = db.DB.ExecContext(ctx, "DELETE t") // want `db.DB is the embedded \*sqlx.DB`
	_, _ = tx.Tx.Exec("DELETE t")             // want `tx.Tx is the embedded \*sqlx.Tx of a \*sqlxcrl.Tx`
	raw := db.DB                              // want `db.DB is the embedded`
	_, _ = st.Stmt.Exec()                     // want `st.Stmt is the embedded \*sqlx.Stmt of a \*sqlxcrl.Stmt: its executions are not retried`
	_ = raw
	db.DB.SetMaxOpenConns(4)
	db.DB.DB.SetMaxIdleConns(1)
	_ = db.DB.Stats()
	_ = db.DB.Mapper
	_ = db.DB.DriverName()
	_, _ = db.ExecContext(ctx, "DELETE t")
	return takesExt(ctx, db)
}
