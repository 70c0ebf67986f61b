package pgxcrl

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/crl-go/crl/core"
)

// SendBatch sends b on a connection of the pool (opened under the
// connection loop when the pool opens one) and runs it once. A batch is
// not retried on its own: its errors come while the caller reads its
// results, after SendBatch returned, and a retry would run again
// statements whose results the caller has already read (and, with
// pgx.QueryExecModeSimpleProtocol or statements that end the implicit
// transaction, that committed). Run it inside RunInTx to have it retried
// as a whole. The connection returns to the pool when the results are
// closed.
func (p *Pool) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	c, err := p.acquire(ctx)
	if err != nil {
		return errBatchResults{err: err}
	}
	bctx, cancel := batchContext(ctx, p.rt.Retrier())
	return &batchResults{inner: c.SendBatch(bctx, b), l: lease{p: p, c: c}, ctx: ctx, cancel: cancel}
}

// batchContext is the context a batch is sent with: bounded by a
// positive queryTimeout while its results are read, as a query's rows
// are (statementContext); cancel, nil when nothing bounds it, ends the
// bound when the results are closed.
func batchContext(ctx context.Context, r *core.Retrier) (context.Context, context.CancelFunc) {
	bctx, end := statementContext(ctx, r, true)
	if end == nil {
		return ctx, nil
	}
	bctx, cancel := context.WithCancel(bctx)
	end(nil) // the bound lasts until cancel, at Close
	return bctx, cancel
}

// boundedBatch are the results of a transaction's batch sent with a
// queryTimeout's bound, which Close ends.
type boundedBatch struct {
	pgx.BatchResults
	cancel context.CancelFunc
}

// Close closes the results and ends the bound.
func (b boundedBatch) Close() error {
	err := b.BatchResults.Close()
	b.cancel()
	return err
}

// CopyFrom copies rowSrc into tableName on a connection of the pool
// (opened under the connection loop when the pool opens one), once. It
// is not retried on its own: a pgx.CopyFromSource is read once and
// cannot be rewound in general (pgx.CopyFromFunc, pgx.CopyFromRows over
// a reader). Run it inside RunInTx, whose closure builds the source
// anew, to have it retried.
func (p *Pool) CopyFrom(ctx context.Context, tableName pgx.Identifier, columnNames []string, rowSrc pgx.CopyFromSource) (int64, error) {
	c, err := p.acquire(ctx)
	if err != nil {
		return 0, err
	}
	l := lease{p: p, c: c}
	return l.copyFrom(ctx, tableName, columnNames, rowSrc)
}

// copyFrom runs CopyFrom once on the lease's connection, then releases
// it (lease.failed first).
func (l *lease) copyFrom(ctx context.Context, tableName pgx.Identifier, columnNames []string, rowSrc pgx.CopyFromSource) (int64, error) {
	n, err := l.c.Conn().CopyFrom(ctx, tableName, columnNames, rowSrc)
	l.failed(ctx, err)
	l.release()
	return n, err
}

// batchResults are a batch's results on a connection of the pool, which
// goes back to the pool when they are closed, or of a Conn (l.held).
// Close hands the batch's first error (a statement's result, else the
// end's) to lease.failed, as a statement's: the server skips the rest of
// a batch after its first error, so that one says what the connection
// met.
type batchResults struct {
	inner  pgx.BatchResults
	l      lease
	ctx    context.Context    // SendBatch's
	err    error              // the first error Exec met
	cancel context.CancelFunc // ends the batch's bound (queryTimeout), nil without one
}

// Exec reads the next statement's result, as pgx.BatchResults.Exec.
func (b *batchResults) Exec() (pgconn.CommandTag, error) {
	tag, err := b.inner.Exec()
	if b.err == nil {
		b.err = err
	}
	return tag, err
}

// Query reads the next statement's rows, as pgx.BatchResults.Query.
func (b *batchResults) Query() (pgx.Rows, error) { return b.inner.Query() }

// QueryRow reads the next statement's row, as pgx.BatchResults.QueryRow.
func (b *batchResults) QueryRow() pgx.Row { return b.inner.QueryRow() }

// Close closes the results and returns the connection to the pool.
func (b *batchResults) Close() error {
	err := b.inner.Close()
	if b.cancel != nil {
		b.cancel()
	}
	if b.err == nil {
		b.err = err
	}
	b.l.failed(b.ctx, b.err)
	b.l.release()
	return err
}

// errBatchResults are the results of a batch that could not be sent.
type errBatchResults struct{ err error }

// Exec returns the error the batch was not sent for.
func (b errBatchResults) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }

// Query returns rows in error, and the error.
func (b errBatchResults) Query() (pgx.Rows, error) {
	return &rows{rowsOf: rowsOf{err: b.err}, state: rowsDone}, b.err
}

// QueryRow returns a row whose Scan returns the error.
func (b errBatchResults) QueryRow() pgx.Row {
	return (*row)(&rows{rowsOf: rowsOf{err: b.err}, state: rowsDone})
}

// Close returns the error.
func (b errBatchResults) Close() error { return b.err }

// Tx returns the transaction the batch ran in, as
// pgx.BatchResults.Tx of the pgx versions that have it: nil where the
// results cannot tell.
func (b *batchResults) Tx() pgx.Tx {
	if t, ok := b.inner.(interface{ Tx() pgx.Tx }); ok {
		return t.Tx()
	}
	return nil
}

// Tx returns nil: the batch was not sent.
func (errBatchResults) Tx() pgx.Tx { return nil }
