package gormcrl

import (
	"context"
	"database/sql"

	"gorm.io/gorm"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/layer/adapter"
)

// retryPool is the gorm.ConnPool of a statement outside any transaction:
// each call runs under the statement loop with its own SQL text as the
// query for the rule's filter. It is put on the statement by a callback
// before GORM runs the statement, and taken off after. It holds no state
// of the statement, so the one over a DB's *sql.DB is shared by all its
// statements (Plugin.statementPool).
type retryPool struct {
	inner   gorm.ConnPool
	retrier *core.Retrier
}

// newRetryPool returns the retryPool over inner, a pool crl did not open
// (over one crl opened, its driver layer retries the statements and the
// statement keeps its ConnPool: see installPool).
func newRetryPool(inner gorm.ConnPool, r *core.Retrier) *retryPool {
	return &retryPool{inner: inner, retrier: r}
}

var (
	_ gorm.ConnPool       = (*retryPool)(nil)
	_ gorm.GetDBConnector = (*retryPool)(nil)
)

// ExecContext runs the statement under the statement loop.
func (p *retryPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return core.Retry(ctx, p.retrier, query, func(ctx context.Context) (sql.Result, error) {
		return p.inner.ExecContext(ctx, query, args...)
	})
}

// QueryContext runs the query under the statement loop; an error while the
// rows are read is not retried.
func (p *retryPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return core.RetryRows(ctx, p.retrier, query, func(ctx context.Context) (*sql.Rows, error) {
		return p.inner.QueryContext(ctx, query, args...)
	})
}

// QueryRowContext runs the one-row query under the statement loop. After
// the last retry the row carries the last driver error (a *sql.Row's error
// cannot be set from outside).
func (p *retryPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	row, _ := adapter.RetryRow(ctx, p.retrier, query, func(ctx context.Context) *sql.Row {
		return p.inner.QueryRowContext(ctx, query, args...)
	}, adapter.ErrorRow)
	return row
}

// PrepareContext prepares under the statement loop.
func (p *retryPool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return core.Retry(ctx, p.retrier, query, func(ctx context.Context) (*sql.Stmt, error) {
		return p.inner.PrepareContext(ctx, query)
	})
}

// GetDBConn returns the *sql.DB under the pool, for gorm.DB.DB().
func (p *retryPool) GetDBConn() (*sql.DB, error) { return sqlDBOf(p.inner) }

// txBeginnerPool is a retryPool over a pool that begins *sql.Tx (a
// *sql.DB): a transaction begun from a statement that carries the pool
// (a hook that calls Begin or Transaction) is a plain one, as in GORM.
type txBeginnerPool struct{ *retryPool }

// BeginTx begins a transaction on the inner pool; it is not retried.
func (p txBeginnerPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error) {
	return p.inner.(gorm.TxBeginner).BeginTx(ctx, opts)
}

// connPoolBeginnerPool is txBeginnerPool for pools whose BeginTx returns a
// gorm.ConnPool (*gorm.PreparedStmtDB).
type connPoolBeginnerPool struct{ *retryPool }

// BeginTx begins a transaction on the inner pool; it is not retried.
func (p connPoolBeginnerPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	return p.inner.(gorm.ConnPoolBeginner).BeginTx(ctx, opts)
}

var (
	_ gorm.TxBeginner       = txBeginnerPool{}
	_ gorm.ConnPoolBeginner = connPoolBeginnerPool{}
)

// asPool returns p as a gorm.ConnPool that keeps the way its inner pool
// begins transactions. (Each is one pointer: nothing is allocated.)
func (p *retryPool) asPool() gorm.ConnPool {
	switch p.inner.(type) {
	case gorm.TxBeginner:
		return txBeginnerPool{p}
	case gorm.ConnPoolBeginner:
		return connPoolBeginnerPool{p}
	}
	return p
}

// unwrapPool returns the retryPool under pool, if it is one.
func unwrapPool(pool gorm.ConnPool) (*retryPool, bool) {
	switch p := pool.(type) {
	case txBeginnerPool:
		return p.retryPool, true
	case connPoolBeginnerPool:
		return p.retryPool, true
	case *retryPool:
		return p, true
	}
	return nil, false
}

// poolRetriesStatements reports whether a statement on pool may be retried on its
// own: not in a transaction (SQL Server rolls a deadlock victim's whole
// transaction back) and not on a *sql.Conn (bound to one connection whose
// state the caller owns; database/sql never retries one either).
func poolRetriesStatements(pool gorm.ConnPool) bool {
	switch pool.(type) {
	case nil, gorm.TxCommitter, *sql.Conn:
		return false
	}
	return true
}

// sqlDBOf returns the *sql.DB under pool, or nil.
func sqlDBOf(pool gorm.ConnPool) (*sql.DB, error) {
	switch p := pool.(type) {
	case *sql.DB:
		return p, nil
	case gorm.GetDBConnector:
		return p.GetDBConn()
	}
	// gorm.DB.DB knows how to find the *sql.DB of a *sql.Tx.
	return (&gorm.DB{Config: &gorm.Config{ConnPool: pool}}).DB()
}

// txPool is a transaction (a *sql.Tx) that records which statement failed
// and whether the COMMIT failed. Nothing on it is retried. It is a gorm.Tx,
// so GORM sees a transaction (nested Transaction calls use savepoints,
// Commit and Rollback work), and a gorm.GetDBConnector, so gorm.DB.DB()
// still finds the *sql.DB.
type txPool struct {
	tx  gorm.Tx
	rec *adapter.Recorder
}

// recordTx puts a txPool under the transaction pool of a *gorm.DB that has
// just begun one: over a *sql.Tx, or under a *gorm.PreparedStmtTX (whose
// statements then reach the txPool only to be prepared, so a failed one is
// not recorded; its COMMIT is). It reports false for a pool it does not
// know, which it leaves as it is.
func recordTx(pool gorm.ConnPool, rec *adapter.Recorder) (gorm.ConnPool, bool) {
	switch t := pool.(type) {
	case *sql.Tx:
		return &txPool{tx: t, rec: rec}, true
	case *gorm.PreparedStmtTX:
		if raw, ok := t.Tx.(*sql.Tx); ok {
			t.Tx = &txPool{tx: raw, rec: rec}
			return t, true
		}
	}
	return pool, false
}

var (
	_ gorm.Tx             = (*txPool)(nil)
	_ gorm.GetDBConnector = (*txPool)(nil)
)

// ExecContext runs the statement in the transaction.
func (p *txPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	res, err := p.tx.ExecContext(ctx, query, args...)
	p.rec.Statement(query, err)
	return res, err
}

// QueryContext runs the query in the transaction.
func (p *txPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	rows, err := p.tx.QueryContext(ctx, query, args...)
	p.rec.Statement(query, err)
	p.rec.Rows(query, rows) // INSERT … RETURNING on MariaDB fails while its rows are read
	return rows, err
}

// QueryRowContext runs the one-row query in the transaction.
func (p *txPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	row := p.tx.QueryRowContext(ctx, query, args...)
	p.rec.Statement(query, row.Err())
	return row
}

// PrepareContext prepares a statement of the transaction.
func (p *txPool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	st, err := p.tx.PrepareContext(ctx, query)
	p.rec.Statement(query, err)
	return st, err
}

// StmtContext returns a transaction-specific prepared statement.
func (p *txPool) StmtContext(ctx context.Context, stmt *sql.Stmt) *sql.Stmt {
	return p.tx.StmtContext(ctx, stmt)
}

// Commit commits the transaction and records a failure.
func (p *txPool) Commit() error {
	err := p.tx.Commit()
	p.rec.Commit(err)
	return err
}

// Rollback rolls the transaction back.
func (p *txPool) Rollback() error { return p.tx.Rollback() }

// GetDBConn returns the *sql.DB the transaction belongs to.
func (p *txPool) GetDBConn() (*sql.DB, error) { return sqlDBOf(p.tx) }
