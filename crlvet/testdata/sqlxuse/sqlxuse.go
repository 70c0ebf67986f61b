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
	_ = takesSqlx(db.DB)                      // want `db.DB is the embedded \*sqlx.DB of a \*sqlxcrl.DB: its Get and Select lose sqlxcrl.s whole-result retry`
	takesSQL(db.DB.DB)                        // want `db.DB is the embedded \*sqlx.DB`
	_, _ = db.DB.ExecContext(ctx, "DELETE t") // want `db.DB is the embedded \*sqlx.DB`
	_, _ = tx.Tx.Exec("DELETE t")             // want `tx.Tx is the embedded \*sqlx.Tx of a \*sqlxcrl.Tx`
	raw := db.DB                              // want `db.DB is the embedded`
	_, _ = st.Stmt.Exec()                     // want `st.Stmt is the embedded \*sqlx.Stmt of a \*sqlxcrl.Stmt: its Get and Select lose`
	_ = raw
	db.DB.SetMaxOpenConns(4)
	db.DB.DB.SetMaxIdleConns(1)
	_ = db.DB.Stats()
	_ = db.DB.Mapper
	_ = db.DB.DriverName()
	_, _ = db.ExecContext(ctx, "DELETE t")
	_, _ = sqlx.NamedExec(db, "UPDATE t SET a = :a", map[string]any{"a": 1})             // want `sqlx.NamedExec given a sqlxcrl handle binds with sqlx's default Mapper, not the handle's; call db.NamedExec`
	_, _ = sqlx.NamedQueryContext(ctx, db, "SELECT :a", map[string]any{"a": 1})          // want `sqlx.NamedQueryContext given a sqlxcrl handle`
	_, _ = sqlx.Preparex(db, "SELECT 1")                                                 // want `sqlx.Preparex given a sqlxcrl handle loses the handle's Mapper and Unsafe, and its statement's executions are not retried`
	_, _ = sqlx.NamedExecContext(ctx, tx, "UPDATE t SET a = :a", map[string]any{"a": 1}) // want `sqlx.NamedExecContext given a sqlxcrl handle`
	_, _ = db.NamedExec("UPDATE t SET a = :a", map[string]any{"a": 1})
	_ = sqlx.Get(db, new(int), "SELECT 1")
	return takesExt(ctx, db)
}
