// Package vetme is the input of crl vet's test: each line marked "want"
// loses the retries of a sqlxcrl handle; the others do not.
package vetme

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
	_ = takesSqlx(db.DB)                      // want
	takesSQL(db.DB.DB)                        // want
	_, _ = db.DB.ExecContext(ctx, "DELETE t") // want
	_, _ = tx.Tx.Exec("DELETE t")             // want
	raw := db.DB                              // want
	_, _ = st.Stmt.Exec()                     // want
	_ = raw
	db.DB.SetMaxOpenConns(4)
	db.DB.DB.SetMaxIdleConns(1)
	_ = db.DB.Stats()
	_ = db.DB.Mapper
	_ = db.DB.DriverName()
	_, _ = db.ExecContext(ctx, "DELETE t")
	return takesExt(ctx, db)
}
