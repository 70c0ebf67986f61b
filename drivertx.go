package crl

import (
	"context"
	"database/sql/driver"

	"github.com/crl-go/crl/config"
)

// tx is a transaction of the driver layer: while it runs, its
// connection runs every statement once and records it in the
// connection's record (replay.go): for its replay, and for unit (the
// Unit of BeginTx's context, nil when it had none), which reads there the
// statement whose error ended it. For a driver whose Commit takes no
// context (commitIgnoresContext), it ends under ctx, BeginTx's.
type tx struct {
	inner    driver.Tx
	cn       *conn
	unit     *config.Unit
	ctx      context.Context
	underCtx bool
	rp       txReplay
}

var _ driver.Tx = (*tx)(nil)

// Commit commits the driver's transaction. A COMMIT that failed with an
// error that ended the transaction is replayed (replay.go). A fault
// injected at COMMIT (fault.go) fails it before it reaches the server;
// when it is not replayed, the server's transaction is rolled back, as
// after a COMMIT the server refused: database/sql ends the Tx with
// Commit's error and never rolls it back, so it would stay open on the
// pooled connection. After a replay that stopped, Commit returns its
// error and commits nothing.
func (t *tx) Commit() error {
	if err := t.rp.stopped; err != nil {
		t.detach()
		return err
	}
	var err error
	if t.cn.faulty() {
		err = t.cn.fail("COMMIT", kindCommit)
	}
	injected := err != nil
	if !injected {
		if err = t.commitOnce(); err == nil {
			t.detach()
			return nil
		}
	}
	if t.rp.on {
		err = t.replay(t.ctx, "COMMIT", err, func(context.Context) error { return t.commitAgain() })
	}
	if err != nil && injected && t.rp.stopped == nil {
		_ = t.endInner(false) // the fault is what the caller must see
	}
	t.detach()
	return err
}

// commitAgain commits the replayed transaction; a fault injected at
// COMMIT fails it again as it failed the first.
func (t *tx) commitAgain() error {
	if err := t.cn.injected("COMMIT", kindCommit); err != nil {
		return err
	}
	return t.commitOnce()
}

// commitOnce commits the driver's transaction.
func (t *tx) commitOnce() error { return t.endInner(true) }

// Rollback rolls the driver's transaction back; after a replay that
// stopped (and rolled it back) it does nothing.
func (t *tx) Rollback() error {
	t.detach()
	if t.rp.stopped != nil {
		return nil
	}
	return t.endInner(false)
}

// detach ends t as the connection's transaction; its unit keeps the
// statement whose error ended it, read from the connection's record,
// which the next transaction resets.
func (t *tx) detach() {
	if t.cn.tx == t {
		t.cn.setTx(nil)
		if t.unit != nil {
			t.unit.Ended(&t.cn.rec)
		}
	}
}

// fail records that query, a statement of t, failed with err, in the
// connection's record, which t's unit reads. A transaction begun in no
// unit records it in the unit of the statement's context, if any.
func (t *tx) fail(ctx context.Context, query string, err error) {
	t.cn.noteBroken(err)
	t.cn.rec.Fail(query, err)
	if t.unit == nil {
		if u := config.UnitOf(ctx); u != nil {
			u.Record(t.cn.r, query, err)
		}
	}
}

// endInner commits (commit) or rolls back the driver's transaction:
// through the driver's own Commit or Rollback, or under the transaction's
// context.
func (t *tx) endInner(commit bool) error {
	var err error
	switch {
	case t.underCtx:
		plain := t.inner.Rollback
		if commit {
			plain = t.inner.Commit
		}
		err = endUnderContext(t.ctx, t.cn, commit, plain)
	case commit:
		err = t.inner.Commit()
	default:
		err = t.inner.Rollback()
	}
	if err != nil {
		t.cn.noteBroken(err)
	}
	return err
}
