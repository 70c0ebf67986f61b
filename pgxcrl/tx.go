package pgxcrl

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// tx is a transaction of a Pool or a Conn. Its statements run once:
// a statement inside a transaction is never retried on its own (the
// server may have rolled the whole transaction back). It notes the text
// of the statement whose error came last, so that RunInTx checks the
// rule's query filter against the statement that ended the transaction.
type tx struct {
	inner  pgx.Tx
	c      *pgxpool.Conn
	owned  bool   // the connection was acquired for the transaction: released when it ends
	failed string // the statement whose error came last
}

var _ pgx.Tx = (*tx)(nil)

// Begin begins a transaction on a connection of the pool (opened under
// the connection loop when the pool opens one), as BeginTx with the
// default options.
func (p *Pool) Begin(ctx context.Context) (pgx.Tx, error) {
	return p.BeginTx(ctx, pgx.TxOptions{})
}

// BeginTx begins a transaction with txOptions on a connection of the
// pool, as pgxpool.Pool.BeginTx; the connection returns to the pool when
// the transaction ends. Its statements are not retried on their own; to
// retry a transaction, run it with RunInTx.
func (p *Pool) BeginTx(ctx context.Context, txOptions pgx.TxOptions) (pgx.Tx, error) {
	c, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	t, err := p.beginOn(ctx, c, true, txOptions)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// beginOn begins a transaction on c; owned says that c was acquired for
// it.
func (p *Pool) beginOn(ctx context.Context, c *pgxpool.Conn, owned bool, opts pgx.TxOptions) (*tx, error) {
	inner, err := c.Conn().BeginTx(ctx, opts)
	if err != nil {
		if owned {
			c.Release()
		}
		return nil, err
	}
	return &tx{inner: inner, c: c, owned: owned}, nil
}

// note notes the statement sql when it failed with err, and returns err.
func (t *tx) note(sql string, err error) error {
	if err != nil {
		t.failed = sql
	}
	return err
}

// end releases the connection of a transaction that ended.
func (t *tx) end() {
	if t.owned && t.c != nil {
		t.c.Release()
		t.c = nil
	}
}

// Begin starts a pseudo nested transaction (a savepoint), as pgx.Tx.Begin.
func (t *tx) Begin(ctx context.Context) (pgx.Tx, error) {
	inner, err := t.inner.Begin(ctx)
	return inner, t.note("SAVEPOINT", err)
}

// Commit commits the transaction and returns the connection to the
// pool, as pgx.Tx.Commit.
func (t *tx) Commit(ctx context.Context) error {
	err := t.inner.Commit(ctx)
	t.end()
	return t.note("COMMIT", err)
}

// Rollback rolls the transaction back and returns the connection to the
// pool, as pgx.Tx.Rollback; after Commit it returns pgx.ErrTxClosed.
func (t *tx) Rollback(ctx context.Context) error {
	err := t.inner.Rollback(ctx)
	t.end()
	return err
}

// CopyFrom runs a COPY in the transaction, once.
func (t *tx) CopyFrom(ctx context.Context, tableName pgx.Identifier, columnNames []string, rowSrc pgx.CopyFromSource) (int64, error) {
	n, err := t.inner.CopyFrom(ctx, tableName, columnNames, rowSrc)
	return n, t.note("COPY", err)
}

// SendBatch sends a batch in the transaction, once.
func (t *tx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return t.inner.SendBatch(ctx, b)
}

// LargeObjects returns the transaction's large objects, as pgx.Tx's.
func (t *tx) LargeObjects() pgx.LargeObjects { return t.inner.LargeObjects() }

// Prepare prepares a statement in the transaction, as pgx.Tx.Prepare.
func (t *tx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	sd, err := t.inner.Prepare(ctx, name, sql)
	return sd, t.note(sql, err)
}

// Exec runs sql in the transaction, once.
func (t *tx) Exec(ctx context.Context, sql string, arguments ...any) (pgconn.CommandTag, error) {
	tag, err := t.inner.Exec(ctx, sql, arguments...)
	return tag, t.note(sql, err)
}

// Query runs sql in the transaction, once; an error met while its rows
// are read is noted as the statement's.
func (t *tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	r, err := t.inner.Query(ctx, sql, args...)
	if err != nil {
		return r, t.note(sql, err)
	}
	return &txRows{Rows: r, t: t, sql: sql}, nil
}

// QueryRow runs sql in the transaction, once; its errors come from Scan.
func (t *tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return txRow{row: t.inner.QueryRow(ctx, sql, args...), t: t, sql: sql}
}

// Conn returns the pgx connection of the transaction.
func (t *tx) Conn() *pgx.Conn { return t.inner.Conn() }

// txRows are a transaction's rows: an error met while they are read is
// noted as their statement's.
type txRows struct {
	pgx.Rows
	t   *tx
	sql string
}

// Next reads the next row, noting an error at the end.
func (r *txRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.t.note(r.sql, r.Rows.Err())
	return false
}

// Close closes the rows, noting an error met there.
func (r *txRows) Close() {
	r.Rows.Close()
	r.t.note(r.sql, r.Rows.Err())
}

// txRow is a transaction's QueryRow.
type txRow struct {
	row pgx.Row
	t   *tx
	sql string
}

// Scan reads the row, noting its error (but pgx.ErrNoRows, an answer).
func (r txRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if !errors.Is(err, pgx.ErrNoRows) {
		r.t.note(r.sql, err)
	}
	return err
}
