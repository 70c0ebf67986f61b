package sqlxcrl

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/crl-go/crl/core"
)

// Stmt is a prepared *sqlx.Stmt. A DB's (DB.Preparex) executions are
// retried by the driver layer of a pool crl opened, and its whole reads
// (Get, Select) as DB's are. A Tx's (Tx.Preparex, or Tx.Stmtx of a DB's)
// executions run once, as every statement in a transaction. Its other
// methods are sqlx's own.
type Stmt struct {
	*sqlx.Stmt
	query   string
	retrier *core.Retrier // a DB's over a pool crl opened: its whole reads' loop
	err     error         // Tx.Stmtx's refusal, which every execution returns
}

// QueryString returns the SQL text the statement was prepared with, the
// query that the rules' filter sees.
func (s *Stmt) QueryString() string { return s.query }

// Unsafe returns a Stmt that ignores columns with no destination field.
func (s *Stmt) Unsafe() *Stmt {
	return &Stmt{Stmt: s.Stmt.Unsafe(), query: s.query, retrier: s.retrier, err: s.err}
}

// GetContext runs the statement as a one-row query and scans the row
// into dest, as one whole read (see DB.GetContext); a Tx's runs once.
func (s *Stmt) GetContext(ctx context.Context, dest any, args ...any) error {
	return read(ctx, s.retrier, s.query, dest, func(ctx context.Context) error {
		return s.Stmt.GetContext(ctx, dest, args...)
	})
}

// Get is GetContext with context.Background().
func (s *Stmt) Get(dest any, args ...any) error {
	return s.GetContext(context.Background(), dest, args...)
}

// SelectContext runs the statement as a query and scans every row into
// dest, as one whole read (see DB.SelectContext); a Tx's runs once.
func (s *Stmt) SelectContext(ctx context.Context, dest any, args ...any) error {
	return read(ctx, s.retrier, s.query, dest, func(ctx context.Context) error {
		return s.Stmt.SelectContext(ctx, dest, args...)
	})
}

// Select is SelectContext with context.Background().
func (s *Stmt) Select(dest any, args ...any) error {
	return s.SelectContext(context.Background(), dest, args...)
}

// NamedStmt is a prepared *sqlx.NamedStmt, whose executions are retried
// as Stmt's are.
type NamedStmt struct {
	*sqlx.NamedStmt
	retrier *core.Retrier // a DB's over a pool crl opened: its whole reads' loop
}

// Unsafe returns a NamedStmt that ignores columns with no destination
// field. Like sqlx's, it marks the statement it was called on unsafe too
// (sqlx's NamedStmt.Unsafe sets the flag on the *sqlx.Stmt both share).
func (n *NamedStmt) Unsafe() *NamedStmt {
	return &NamedStmt{NamedStmt: n.NamedStmt.Unsafe(), retrier: n.retrier}
}

// GetContext binds arg, runs a one-row query and scans the row into dest,
// as one whole read (see DB.GetContext); a Tx's runs once.
func (n *NamedStmt) GetContext(ctx context.Context, dest any, arg any) error {
	return read(ctx, n.retrier, n.QueryString, dest, func(ctx context.Context) error {
		return n.NamedStmt.GetContext(ctx, dest, arg)
	})
}

// Get is GetContext with context.Background().
func (n *NamedStmt) Get(dest any, arg any) error {
	return n.GetContext(context.Background(), dest, arg)
}

// SelectContext binds arg, runs the query and scans every row into dest,
// as one whole read (see DB.SelectContext); a Tx's runs once.
func (n *NamedStmt) SelectContext(ctx context.Context, dest any, arg any) error {
	return read(ctx, n.retrier, n.QueryString, dest, func(ctx context.Context) error {
		return n.NamedStmt.SelectContext(ctx, dest, arg)
	})
}

// Select is SelectContext with context.Background().
func (n *NamedStmt) Select(dest any, arg any) error {
	return n.SelectContext(context.Background(), dest, arg)
}
