package connector

import (
	"context"
	"database/sql/driver"
)

// tx is a transaction of the driver layer: while it runs, its
// connection runs every statement once and records it in unit (the Unit
// of BeginTx's context, nil when it had none). For a driver whose Commit
// takes no context (commitIgnoresContext), it ends under ctx, BeginTx's.
type tx struct {
	inner    driver.Tx
	cn       *conn
	unit     *Unit
	ctx      context.Context
	underCtx bool
}

var _ driver.Tx = (*tx)(nil)

// Commit commits the driver's transaction.
func (t *tx) Commit() error { return t.end(true, t.inner.Commit) }

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
