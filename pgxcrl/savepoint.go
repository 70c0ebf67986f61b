package pgxcrl

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// savepoint is a pseudo nested transaction (pgx.Tx.Begin on a
// transaction), as pgx's own: SAVEPOINT sp_N when it begins, RELEASE
// SAVEPOINT at Commit, ROLLBACK TO SAVEPOINT at Rollback, with pgx's
// names. Those are statements of the transaction like any other, and so
// are the statements run in the savepoint: recorded, and re-sent when
// the transaction is replayed (a replay re-creates the savepoint before
// the statements run in it).
type savepoint struct {
	t      *tx
	num    int64
	closed bool // released or rolled back to
}

var _ pgx.Tx = (*savepoint)(nil)

// Begin starts a pseudo nested transaction (a savepoint) in the
// transaction, as pgx.Tx.Begin; see savepoint.
func (t *tx) Begin(ctx context.Context) (pgx.Tx, error) {
	t.savepoints++
	n := t.savepoints
	if _, err := t.Exec(ctx, "savepoint sp_"+strconv.FormatInt(n, 10)); err != nil {
		return nil, err
	}
	return &savepoint{t: t, num: n}, nil
}

// Begin starts a savepoint in the transaction, as pgx's nested Begin.
func (s *savepoint) Begin(ctx context.Context) (pgx.Tx, error) {
	if s.closed {
		return nil, pgx.ErrTxClosed
	}
	return s.t.Begin(ctx)
}

// Commit releases the savepoint; pgx.ErrTxClosed once it was released
// or rolled back to.
func (s *savepoint) Commit(ctx context.Context) error {
	return s.end(ctx, "release savepoint sp_")
}

// Rollback rolls back to the savepoint; pgx.ErrTxClosed once it was
// released or rolled back to, so that a deferred Rollback after Commit
// is safe, as pgx's.
func (s *savepoint) Rollback(ctx context.Context) error {
	return s.end(ctx, "rollback to savepoint sp_")
}

// end runs the statement that ends the savepoint, the savepoint's
// number appended to verb.
func (s *savepoint) end(ctx context.Context, verb string) error {
	if s.closed {
		return pgx.ErrTxClosed
	}
	_, err := s.t.Exec(ctx, verb+strconv.FormatInt(s.num, 10))
	s.closed = true
	return err
}

// Exec runs sql in the transaction (see tx.Exec).
func (s *savepoint) Exec(ctx context.Context, sql string, arguments ...any) (pgconn.CommandTag, error) {
	if s.closed {
		return pgconn.CommandTag{}, pgx.ErrTxClosed
	}
	return s.t.Exec(ctx, sql, arguments...)
}

// Query runs sql in the transaction (see tx.Query).
func (s *savepoint) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if s.closed {
		r := &txRows{t: s.t, state: rowsDone}
		r.err = pgx.ErrTxClosed
		return r, r.err
	}
	return s.t.Query(ctx, sql, args...)
}

// QueryRow is Query for at most one row; its errors come from Scan.
func (s *savepoint) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	r, _ := s.Query(ctx, sql, args...) // the error is Scan's
	return (*txRow)(r.(*txRows))
}

// Prepare prepares a statement in the transaction (see tx.Prepare).
func (s *savepoint) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if s.closed {
		return nil, pgx.ErrTxClosed
	}
	return s.t.Prepare(ctx, name, sql)
}

// CopyFrom runs a COPY in the transaction (see tx.CopyFrom).
func (s *savepoint) CopyFrom(ctx context.Context, tableName pgx.Identifier, columnNames []string, rowSrc pgx.CopyFromSource) (int64, error) {
	if s.closed {
		return 0, pgx.ErrTxClosed
	}
	return s.t.CopyFrom(ctx, tableName, columnNames, rowSrc)
}

// SendBatch sends a batch in the transaction (see tx.SendBatch).
func (s *savepoint) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if s.closed {
		return errBatchResults{err: pgx.ErrTxClosed}
	}
	return s.t.SendBatch(ctx, b)
}

// LargeObjects returns the transaction's large objects (see
// tx.LargeObjects).
func (s *savepoint) LargeObjects() pgx.LargeObjects { return s.t.LargeObjects() }

// Conn returns the pgx connection of the transaction.
func (s *savepoint) Conn() *pgx.Conn { return s.t.Conn() }
