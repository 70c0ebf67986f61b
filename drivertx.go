package crl

import (
	"context"
	"database/sql/driver"

	"github.com/crl-go/crl/config"
)

// tx is a transaction of the driver layer: while it runs, its
// connection runs every statement once and records it in unit (the Unit
// of BeginTx's context, nil when it had none). For a driver whose Commit
// takes no context (commitIgnoresContext), it ends under ctx, BeginTx's.
type tx struct {
	inner    driver.Tx
	cn       *conn
	unit     *config.Unit
	ctx      context.Context
	underCtx bool
}

var _ driver.Tx = (*tx)(nil)

// Commit commits the driver's transaction. A fault injected at COMMIT
// (fault.go) is returned instead, after the server's transaction was
// rolled back, as after a COMMIT the server refused: database/sql ends
// the Tx with Commit's error and never rolls it back, so it would stay
// open on the pooled connection.
func (t *tx) Commit() error {
	if err := t.cn.injected("COMMIT", kindCommit); err != nil {
		_ = t.end(false, t.inner.Rollback) // the fault is what the caller must see
		return err
	}
	return t.end(true, t.inner.Commit)
}

// Rollback rolls the driver's transaction back.
func (t *tx) Rollback() error { return t.end(false, t.inner.Rollback) }

// end ends the transaction: through plain, the driver's own Commit or
// Rollback, or under the transaction's context.
func (t *tx) end(commit bool, plain func() error) error {
	if t.cn.tx == t {
		t.cn.tx = nil
	}
	var err error
	if t.underCtx {
		err = endUnderContext(t.ctx, t.cn, commit, plain)
	} else {
		err = plain()
	}
	if err != nil {
		t.cn.noteBroken(err)
	}
	return err
}
