package crl

import (
	"context"
	"database/sql/driver"
	"errors"

	"github.com/crl-go/crl/internal/tables/family"
)

// commitIgnoresContext reports whether the driver family's Tx.Commit and
// Tx.Rollback run without the transaction's context, so that a COMMIT
// stalled on the wire outlives the caller's deadline
// (family.Profile.CommitIgnoresContext: go-sql-driver/mysql's do;
// database/sql gives a driver's Commit no context). The driver layer's
// transactions of such a family end under their context
// (endUnderContext).
func commitIgnoresContext(fam family.Family) bool { return fam.Profile().CommitIgnoresContext }

// endUnderContext runs COMMIT (commit) or ROLLBACK of t through the
// driver's context-aware ExecContext under ctx, the transaction's
// (BeginTx's), whose own cancellation closes the connection when ctx ends,
// so a stall on the wire returns at the deadline with ctx's error: for
// COMMIT an outcome unknown (CommitOutcome), never a hang or a success it
// cannot know. A context that ends nothing, or a driver without
// ExecContext, takes the driver's own path (plain). A connection whose
// COMMIT or ROLLBACK was cut off or refused for its context is broken: it
// may be inside a transaction, so it never goes back to the pool (the
// server rolls back what it does not commit when the connection closes).
func endUnderContext(ctx context.Context, cn *conn, commit bool, plain func() error) error {
	stmt := "ROLLBACK"
	if commit {
		stmt = "COMMIT"
	}
	if ctx.Done() == nil || cn.execer == nil {
		return plain()
	}
	if err := ctx.Err(); err != nil {
		// Too late to send anything: the connection closes, and the server
		// rolls the transaction back. For a COMMIT that is still no
		// success, and the error says it is a broken connection.
		cn.markBroken()
		return errors.Join(driver.ErrBadConn, err)
	}
	_, err := cn.execer.ExecContext(ctx, stmt, nil)
	if errors.Is(err, driver.ErrSkip) {
		return plain()
	}
	if err != nil && (ctx.Err() != nil || errors.Is(err, driver.ErrBadConn)) {
		cn.markBroken()
	}
	return err
}
