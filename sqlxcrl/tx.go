package sqlxcrl

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/crl-go/crl/config"
)

// Tx is a *sqlx.Tx whose statements are never retried one by one: SQL
// Server rolls back the whole transaction of a deadlock victim, so
// re-running one statement would run it outside the transaction. Over a
// pool crl opened, the driver layer records the statement whose error
// ended the transaction (whichever method ran it, an error met while its
// rows were read included) in the unit RunInTx begins it with, so that
// RunInTx checks the rule's query filter against it.
type Tx struct {
	*sqlx.Tx
	unit *config.Unit // the unit of the context the transaction was begun with, if any
}

var (
	_ sqlx.ExtContext = (*Tx)(nil)
	_ sqlx.Ext        = (*Tx)(nil)
)

// FailedQuery returns the text of the statement whose error ended the
// unit this transaction runs in ("" when none did, or when it runs in
// none: begun outside RunInTx, or over a pool crl did not open).
func (tx *Tx) FailedQuery() string { return tx.unit.FailedQuery() }

// Unsafe returns a Tx that ignores columns with no destination field. It
// is the same transaction.
func (tx *Tx) Unsafe() *Tx { return &Tx{Tx: tx.Tx.Unsafe(), unit: tx.unit} }

// NamedQueryContext binds arg with the transaction's Mapper and runs the
// query in the transaction, once; the rows scan with its Mapper and
// Unsafe. sqlx's Tx has NamedQuery but no such method: this one makes
// sqlx.NamedQueryContext(ctx, tx, …), which binds with sqlx's default
// mapper when given a wrapper, unnecessary.
func (tx *Tx) NamedQueryContext(ctx context.Context, query string, arg any) (*sqlx.Rows, error) {
	q, args, err := tx.Tx.BindNamed(query, arg)
	if err != nil {
		return nil, err
	}
	return tx.QueryxContext(ctx, q, args...)
}

// PreparexContext prepares a statement in the transaction; its
// executions run once, as every statement in a transaction.
func (tx *Tx) PreparexContext(ctx context.Context, query string) (*Stmt, error) {
	s, err := tx.Tx.PreparexContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &Stmt{Stmt: s, query: query}, nil
}

// Preparex is PreparexContext with context.Background().
func (tx *Tx) Preparex(query string) (*Stmt, error) {
	return tx.PreparexContext(context.Background(), query)
}

// PrepareNamedContext prepares a named statement in the transaction; its
// executions run once.
func (tx *Tx) PrepareNamedContext(ctx context.Context, query string) (*NamedStmt, error) {
	s, err := tx.Tx.PrepareNamedContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &NamedStmt{NamedStmt: s}, nil
}

// PrepareNamed is PrepareNamedContext with context.Background().
func (tx *Tx) PrepareNamed(query string) (*NamedStmt, error) {
	return tx.PrepareNamedContext(context.Background(), query)
}

// StmtxContext returns the transaction's own version of a prepared
// statement: a *Stmt of a DB, or what sqlx.Tx.StmtxContext takes
// (*sql.Stmt, sqlx.Stmt, *sqlx.Stmt). For anything else (or a nil
// statement), on which sqlx's panics, every execution of the returned
// Stmt fails with ErrNotStmt.
func (tx *Tx) StmtxContext(ctx context.Context, stmt any) *Stmt {
	switch v := stmt.(type) {
	case *Stmt:
		if v != nil && v.err != nil {
			return v // refused already: its error stays
		}
		if v != nil && v.Stmt != nil && v.Stmt.Stmt != nil {
			return &Stmt{Stmt: tx.Tx.StmtxContext(ctx, v.Stmt), query: v.query}
		}
	case *sqlx.Stmt:
		if v != nil && v.Stmt != nil {
			return &Stmt{Stmt: tx.Tx.StmtxContext(ctx, v)}
		}
	case sqlx.Stmt:
		if v.Stmt != nil {
			return &Stmt{Stmt: tx.Tx.StmtxContext(ctx, v)}
		}
	case *sql.Stmt:
		if v != nil {
			return &Stmt{Stmt: tx.Tx.StmtxContext(ctx, v)}
		}
	}
	err := fmt.Errorf("%w: %T", ErrNotStmt, stmt)
	return &Stmt{Stmt: refusedStmt(err), err: err}
}

// ErrNotStmt is the error of every execution of the statement that
// Tx.Stmtx returns for a value that is not a prepared statement (or a nil
// one).
var ErrNotStmt = errors.New("sqlxcrl: Tx.Stmtx: not a prepared statement (*sqlxcrl.Stmt, *sqlx.Stmt, sqlx.Stmt or *sql.Stmt)")

// Stmtx is StmtxContext with context.Background().
func (tx *Tx) Stmtx(stmt any) *Stmt { return tx.StmtxContext(context.Background(), stmt) }

// NamedStatement is a named prepared statement that Tx.NamedStmt makes
// the transaction's own: the *NamedStmt that DB.PrepareNamed returns, or a
// *sqlx.NamedStmt. Both have these methods; sqlx's NamedStmt takes only
// its own type, and a method cannot take two, so Tx.NamedStmt takes what
// the two share. Another implementation is refused (see Tx.NamedStmt).
type NamedStatement interface {
	Close() error
	ExecContext(ctx context.Context, arg any) (sql.Result, error)
	QueryxContext(ctx context.Context, arg any) (*sqlx.Rows, error)
	QueryRowxContext(ctx context.Context, arg any) *sqlx.Row
	SelectContext(ctx context.Context, dest any, arg any) error
	GetContext(ctx context.Context, dest any, arg any) error
}

// NamedStmtContext returns the transaction's own version of a named
// statement, as sqlx's does (with the transaction's Mapper). stmt is a
// *NamedStmt (what DB.PrepareNamed returns) or a *sqlx.NamedStmt; for any
// other implementation of NamedStatement, which cannot be moved into the
// transaction, every execution of the returned statement fails with
// ErrNotNamedStmt (sqlx's Tx.Stmtx panics on a statement it does not
// know; sqlxcrl's do not).
func (tx *Tx) NamedStmtContext(ctx context.Context, stmt NamedStatement) *NamedStmt {
	var s *sqlx.NamedStmt
	switch v := stmt.(type) {
	case *NamedStmt:
		if v != nil {
			s = v.NamedStmt
		}
	case *sqlx.NamedStmt:
		s = v
	}
	if s == nil || s.Stmt == nil || s.Stmt.Stmt == nil {
		err := fmt.Errorf("%w: %T", ErrNotNamedStmt, stmt)
		return &NamedStmt{NamedStmt: &sqlx.NamedStmt{Stmt: refusedStmt(err)}}
	}
	return &NamedStmt{NamedStmt: tx.Tx.NamedStmtContext(ctx, s)}
}

// NamedStmt is NamedStmtContext with context.Background().
func (tx *Tx) NamedStmt(stmt NamedStatement) *NamedStmt {
	return tx.NamedStmtContext(context.Background(), stmt)
}

// ErrNotNamedStmt is the error of every execution of the statement that
// Tx.NamedStmt returns for a statement that is neither a *NamedStmt nor a
// *sqlx.NamedStmt (or a nil one).
var ErrNotNamedStmt = errors.New("sqlxcrl: Tx.NamedStmt: not a *sqlxcrl.NamedStmt or *sqlx.NamedStmt")

// Compile-time checks: the two statements Tx.NamedStmt takes.
var (
	_ NamedStatement = (*NamedStmt)(nil)
	_ NamedStatement = (*sqlx.NamedStmt)(nil)
)
