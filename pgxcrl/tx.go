package pgxcrl

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

// tx is a transaction of a Pool or a Conn. Its statements run once on
// their own: a statement inside a transaction is never retried alone. It
// records each statement (text, arguments copied) and a digest of what
// the caller saw of its answer (core.TxRecord), so that when a statement
// or the COMMIT fails with an error that ended the server's transaction
// and that a rule retries, core's replay rolls back, begins again on the
// same connection, re-sends the recorded statements and compares their
// answers: equal, the failed statement runs again and the caller never
// knows; different, the caller gets the original error joined with
// core.ErrReplayDiverged (replay.go in core). Its record notes the text
// of the statement whose error ended it, for RunInTx's query filter.
type tx struct {
	inner      pgx.Tx
	c          *pgxpool.Conn
	p          *Pool
	opts       pgx.TxOptions
	owned      bool // the connection was acquired for the transaction: released when it ends
	rec        core.TxRecord
	unsure     bool         // something ran that the record does not hold (a batch, COPY, large objects): no replay
	rolledBy   error        // a replay failed and rolled the server's transaction back: the error later statements get
	failover   bool         // a statement failed with an error of the class failover: the connection is closed when the transaction ends
	held       *Conn        // the Conn the transaction was begun on, whose Release closes its connection then
	unit       *config.Unit // the unit of work the transaction was begun in (crl.Retry's), which records its failures
	savepoints int64        // savepoints begun (Begin), which numbers the next, as pgx's
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
// the transaction ends. Its statements are recorded and the transaction
// replayed after an error that ended it, as the database/sql layer's
// (docs/pgx.md).
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
	u := unitOf(ctx)
	if err != nil {
		if owned {
			c.Release()
		}
		if u != nil {
			u.Record(p.rt.Retrier(), "BEGIN", err)
		}
		return nil, err
	}
	t := &tx{inner: inner, c: c, p: p, opts: opts, owned: owned, unit: u}
	// txReplay=off (a limit of zero) leaves the transaction unrecorded:
	// its errors come back as the driver gave them, as without replay.
	if limit := p.rt.TxReplayLimit(); limit > 0 {
		t.rec.Reset(limit)
	} else {
		t.unsure = true
	}
	return t, nil
}

// note notes the statement sql when it failed with err in the record
// (core.TxRecord.Fail: the statement whose error ended the transaction,
// which a failed ROLLBACK TO SAVEPOINT after it does not replace), and
// returns err; the transaction's unit, if any, records it.
func (t *tx) note(sql string, err error) error {
	if err != nil {
		t.rec.Fail(sql, err)
		t.failover = t.failover || failover(t.p, err)
		if t.unit != nil {
			t.unit.Record(t.p.rt.Retrier(), sql, err)
		}
	}
	return err
}

// end releases the connection of a transaction that ended, closed first
// when a statement of the transaction failed with an error of the class
// failover (as lease.failed does outside a transaction; the connection
// of a transaction begun on a Conn stays the caller's until its Release).
func (t *tx) end(ctx context.Context) {
	if t.held != nil && t.failover {
		t.held.failover = true
	}
	if t.owned && t.c != nil {
		if t.failover {
			closeConn(ctx, t.c)
		}
		t.c.Release()
		t.c = nil
	}
}

// conn is the transaction's pgx connection.
func (t *tx) conn() *pgx.Conn { return t.inner.Conn() }

// rolledBack is the error of a statement of a transaction that a failed
// replay rolled back: nothing more runs in it.
func (t *tx) rolledBack() error {
	return fmt.Errorf("pgxcrl: the transaction was rolled back after its replay stopped: %w", t.rolledBy)
}

// recover is what follows a failed statement sql (or "COMMIT"): core's
// replay, again being the statement's run on the new transaction; it
// returns nil when the statement ran again after an equal replay. After
// a replay that stopped, the server's transaction is rolled back, and
// the transaction refuses every later statement.
func (t *tx) recover(ctx context.Context, sql string, err error, again func(ctx context.Context) error) error {
	if t.unsure {
		return err
	}
	out := replayTx(ctx, t.p.rt.Retrier(), core.TxReplay{
		Record: &t.rec, Query: sql, Rollback: t.exec("rollback"), Begin: t.exec(beginSQL(t.opts)),
		Resend: t.resend, Retry: again,
	}, err)
	if out != nil && errors.Is(out, core.ErrReplayDiverged) {
		t.rolledBy = out
		_, rerr := t.conn().Exec(ctx, "rollback")
		return errors.Join(out, rerr)
	}
	return out
}

// exec returns a function that runs sql on the transaction's connection.
func (t *tx) exec(sql string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		_, err := t.conn().Exec(ctx, sql)
		return err
	}
}

// beginSQL is the BEGIN of opts, as pgx writes it.
func beginSQL(opts pgx.TxOptions) string {
	if opts.BeginQuery != "" {
		return opts.BeginQuery
	}
	s := "begin"
	if opts.IsoLevel != "" {
		s += " isolation level " + string(opts.IsoLevel)
	}
	if opts.AccessMode != "" {
		s += " " + string(opts.AccessMode)
	}
	if opts.DeferrableMode != "" {
		s += " " + string(opts.DeferrableMode)
	}
	return s
}

// execSeen is what the record's seen holds for an Exec: its digest is the
// rows affected.
const execSeen = -1

// record records a statement that succeeded and returns its index in the
// record (-1 past the record's limit).
func (t *tx) record(sql string, args []any) int {
	i, dst := t.rec.Add(sql, len(args))
	for j, v := range args {
		if b, ok := v.([]byte); ok {
			v = bytes.Clone(b)
		}
		dst[j] = v
	}
	return i
}

// resend runs recorded statement i again for a replay and returns the
// digest of as much of its answer as the caller had seen.
func (t *tx) resend(ctx context.Context, i int) (core.Digest, error) {
	sql, args, seen := t.rec.Statement(i)
	var d core.Digest
	if seen == execSeen {
		tag, err := t.conn().Exec(ctx, sql, args...)
		d.Add(tag.RowsAffected())
		return d, err
	}
	rows, err := t.conn().Query(ctx, sql, args...)
	if err != nil {
		return d, err
	}
	for n := int64(0); n < seen; n++ {
		if !rows.Next() {
			if rows.Err() == nil {
				d.AddEnd()
			}
			break
		}
		addRow(&d, rows.RawValues())
	}
	rows.Close()
	return d, rows.Err()
}

// addRow adds a row's values, as the server sent them, to d: NULL apart
// from an empty value.
func addRow(d *core.Digest, values [][]byte) {
	for _, v := range values {
		if v == nil {
			d.Add(nil)
		} else {
			d.Add(v)
		}
	}
}

// Exec runs sql in the transaction once, bounded by a positive
// queryTimeout, replaying the transaction after an error that ended it
// (see tx).
func (t *tx) Exec(ctx context.Context, sql string, arguments ...any) (pgconn.CommandTag, error) {
	if t.rolledBy != nil {
		return pgconn.CommandTag{}, t.rolledBack()
	}
	sctx, end := statementContext(ctx, t.p.rt.Retrier(), false)
	tag, err := t.inner.Exec(sctx, sql, arguments...)
	if end != nil {
		end(err)
	}
	if err != nil {
		if tag, err = t.execFailed(ctx, sql, arguments, err); err != nil {
			return tag, t.note(sql, err)
		}
	}
	var d core.Digest
	d.Add(tag.RowsAffected())
	t.rec.Saw(t.record(sql, arguments), execSeen, d)
	return tag, nil
}

// execFailed is Exec after sql failed with err: the replay, and the
// statement's answer on the new transaction. (Apart from Exec, so that
// the answer's variable escapes to the replay's closure only here.)
func (t *tx) execFailed(ctx context.Context, sql string, arguments []any, err error) (pgconn.CommandTag, error) {
	var tag pgconn.CommandTag
	err = t.recover(ctx, sql, err, func(ctx context.Context) error {
		var aerr error
		tag, aerr = t.conn().Exec(ctx, sql, arguments...)
		return aerr
	})
	return tag, err
}

// Commit commits the transaction and returns the connection to the
// pool, as pgx.Tx.Commit; a COMMIT that failed with an error that ended
// the transaction (a serialization failure) is replayed.
func (t *tx) Commit(ctx context.Context) error {
	if t.rolledBy != nil {
		err := t.inner.Rollback(ctx)
		t.end(ctx)
		return errors.Join(pgx.ErrTxCommitRollback, t.rolledBy, ignoreClosed(err))
	}
	err := t.inner.Commit(ctx)
	if err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		err = t.recover(ctx, "COMMIT", err, t.commitAgain)
	}
	err = t.note("COMMIT", err)
	t.end(ctx)
	return err
}

// commitAgain is the COMMIT of a replayed transaction.
func (t *tx) commitAgain(ctx context.Context) error {
	tag, err := t.conn().Exec(ctx, "commit")
	if err == nil && tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return err
}

// Rollback rolls the transaction back and returns the connection to the
// pool, as pgx.Tx.Rollback; after Commit it returns pgx.ErrTxClosed.
func (t *tx) Rollback(ctx context.Context) error {
	err := t.inner.Rollback(ctx)
	t.end(ctx)
	return err
}

// CopyFrom runs a COPY in the transaction, once; the transaction is no
// longer replayed (a source cannot be read twice).
func (t *tx) CopyFrom(ctx context.Context, tableName pgx.Identifier, columnNames []string, rowSrc pgx.CopyFromSource) (int64, error) {
	t.unsure = true
	n, err := t.inner.CopyFrom(ctx, tableName, columnNames, rowSrc)
	return n, t.note("COPY", err)
}

// SendBatch sends a batch in the transaction, once; the transaction is no
// longer replayed.
func (t *tx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	t.unsure = true
	bctx, cancel := batchContext(ctx, t.p.rt.Retrier())
	res := t.inner.SendBatch(bctx, b)
	if cancel == nil {
		return res
	}
	return boundedBatch{res, cancel}
}

// LargeObjects returns the transaction's large objects, as pgx.Tx's; the
// transaction is no longer replayed.
func (t *tx) LargeObjects() pgx.LargeObjects {
	t.unsure = true
	return t.inner.LargeObjects()
}

// Prepare prepares a statement in the transaction, as pgx.Tx.Prepare
// (a prepared statement outlives a rollback: a replay finds it).
func (t *tx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	sd, err := t.inner.Prepare(ctx, name, sql)
	return sd, t.note(sql, err)
}

// Conn returns the pgx connection of the transaction. Statements run on
// it directly are not recorded.
func (t *tx) Conn() *pgx.Conn { return t.inner.Conn() }
