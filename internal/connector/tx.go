package connector

import "database/sql/driver"

// tx is a transaction of the driver layer: while it runs, its
// connection runs every statement once and records it in unit (the Unit
// of BeginTx's context, nil when it had none).
type tx struct {
	inner driver.Tx
	cn    *conn
	unit  *Unit
}

var _ driver.Tx = (*tx)(nil)

// Commit commits the driver's transaction.
func (t *tx) Commit() error {
	t.end()
	err := t.inner.Commit()
	if err != nil {
		t.cn.noteBroken(err)
	}
	return err
}

// Rollback rolls the driver's transaction back.
func (t *tx) Rollback() error {
	t.end()
	err := t.inner.Rollback()
	if err != nil {
		t.cn.noteBroken(err)
	}
	return err
}

// end ends the transaction on its connection.
func (t *tx) end() {
	if t.cn.tx == t {
		t.cn.tx = nil
	}
}
