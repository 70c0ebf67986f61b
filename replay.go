package crl

import (
	"bytes"
	"context"
	"database/sql/driver"
	"errors"
	"io"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

// Transaction replay in the driver layer (core.Retrier.Replay is the
// loop). A transaction BeginTx began records, in its connection's
// core.TxRecord, every statement that succeeded (text, arguments copied)
// and the digest of what the caller saw of its answer: the counts of an
// exec the caller read (result), the rows of a query the caller read
// (rows.go). When a statement or the COMMIT fails with an error that
// ended the server's transaction and that a rule retries, the layer rolls
// back, begins again on the same connection, re-sends the record and
// compares; the caller's *sql.Tx never knows when every answer is equal.

// Which counts of an exec the caller read: an exec statement's seen.
const (
	sawAffected int64 = 1 << iota
	sawInsertID
)

// txReplay is what a transaction keeps for its replay.
type txReplay struct {
	on      bool             // recording: a pool with replay on, a context that allows retries
	opts    driver.TxOptions // BeginTx's, for the replay's BEGIN
	stopped error            // the error of a replay that stopped: the transaction is over
	gen     uint64           // the connection's transaction number, for results and rows read later
}

// startRecording resets the connection's record for t, a transaction
// BeginTx began with opts; noRetry: its context allows no retry. The
// record takes the statement whose error ends t in any case (its unit
// reads it there); the statements that succeed, only for a replay: on a
// pool with replay on, under a context that allows retries.
func (cn *conn) startRecording(t *tx, opts driver.TxOptions, noRetry bool) {
	cn.txGen++
	t.rp.gen, t.rp.opts = cn.txGen, opts
	cn.rec.Reset(cn.c.replayLimit)
	// Not cleared: past its length the slice holds results of earlier
	// transactions, which keep alive only the chunks they came from (those
	// of the connection's longest transaction at most, 2 KiB per 32 execs)
	// until later transactions write over them.
	cn.results = cn.results[:0]
	t.rp.on = cn.c.replayLimit > 0 && !noRetry
}

// recording returns the connection's transaction when it records, nil
// otherwise.
func (cn *conn) recording() *tx {
	if t := cn.tx; t != nil && t.rp.on {
		return t
	}
	return nil
}

// recordArgs records a statement that succeeded and copies its arguments
// into the record; it returns the statement's index (-1 past the limit).
func (cn *conn) recordArgs(query string, args []driver.NamedValue) int {
	i, vals := cn.rec.Add(query, len(args))
	args = args[:len(vals)]
	for k := range vals {
		a := &args[k]
		v := a.Value
		if b, ok := v.([]byte); ok {
			v = bytes.Clone(b) // the caller may reuse its buffer
		}
		if a.Name != "" {
			v = driver.NamedValue{Name: a.Name, Ordinal: a.Ordinal, Value: v}
		}
		vals[k] = v
	}
	return i
}

// recordExec records an exec that succeeded and returns its result, which
// notes what the caller reads of it.
func (cn *conn) recordExec(query string, args []driver.NamedValue, res driver.Result) driver.Result {
	i := cn.recordArgs(query, args)
	if i < 0 {
		return res
	}
	r := cn.newResult() // zero: never handed out before
	r.inner, r.cn, r.i, r.gen = res, cn, i, cn.txGen
	cn.results = append(cn.results, r)
	return r
}

// resultChunk is how many exec results a connection hands out from one
// allocation.
const resultChunk = 32

// newResult returns an exec result never handed out before, from the
// connection's current chunk. A result is never reused: a caller may keep
// its sql.Result past later statements and transactions, and what it
// reads of it must note that statement's answer (its gen and index say
// which), never another's. A chunk is freed when none of its results is
// held any longer.
func (cn *conn) newResult() *result {
	if len(cn.freeResult) == 0 {
		cn.freeResult = make([]result, resultChunk)
	}
	r := &cn.freeResult[0]
	cn.freeResult = cn.freeResult[1:]
	return r
}

// recordQuery records a query that succeeded; its rows note what the
// caller reads.
func (cn *conn) recordQuery(query string, args []driver.NamedValue, rs *rows) {
	i := cn.recordArgs(query, args)
	if i < 0 {
		return
	}
	cn.results = append(cn.results, nil)
	rs.rec, rs.ri, rs.gen, rs.state = &cn.rec, i, cn.txGen, rowsRecorded // not read ahead: Next reads the driver's rows
	cn.rec.RowsOpened()
}

// result is the result of an exec recorded for replay: what the caller
// reads of it is noted in the record. After a replay it answers with the
// re-sent statement's result (an insert ID the server gave again).
type result struct {
	inner    driver.Result
	cn       *conn
	i        int
	gen      uint64
	seen     int64
	affected int64
	id       int64
}

// RowsAffected returns the driver's count and notes that the caller read it.
func (r *result) RowsAffected() (int64, error) {
	n, err := r.inner.RowsAffected()
	if err == nil {
		r.affected = n
		r.saw(sawAffected)
	}
	return n, err
}

// LastInsertId returns the driver's ID and notes that the caller read it.
func (r *result) LastInsertId() (int64, error) {
	n, err := r.inner.LastInsertId()
	if err == nil {
		r.id = n
		r.saw(sawInsertID)
	}
	return n, err
}

// saw notes that the caller read part, while the transaction runs.
func (r *result) saw(part int64) {
	r.seen |= part
	if t := r.cn.recording(); t != nil && t.rp.gen == r.gen {
		r.cn.rec.Saw(r.i, r.seen, execDigest(r.seen, r.affected, r.id))
	}
}

// execDigest is the digest of the counts of an exec the caller read.
func execDigest(seen, affected, id int64) core.Digest {
	var d core.Digest
	if seen&sawAffected != 0 {
		d.Add(affected)
	}
	if seen&sawInsertID != 0 {
		d.Add(id)
	}
	return d
}

// execFailed replays the recording transaction t after its exec of query
// failed with err; run runs the exec again. The exec's answer after an
// equal replay is recorded.
func (t *tx) execFailed(ctx context.Context, query string, args []driver.NamedValue, err error,
	run func(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error)) (driver.Result, error) {
	var res driver.Result
	err = t.replay(ctx, query, err, func(ctx context.Context) error {
		var err error
		res, err = run(ctx, query, args)
		return err
	})
	if err != nil {
		return nil, err
	}
	return t.cn.recordExec(query, args, res), nil
}

// query replays the recording transaction t after its query failed with
// err; run runs the query again. The caller records the rows.
func (t *tx) query(ctx context.Context, query string, err error, run func(ctx context.Context) (driver.Rows, error)) (driver.Rows, error) {
	var ri driver.Rows
	err = t.replay(ctx, query, err, func(ctx context.Context) error {
		var err error
		ri, err = run(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ri, nil
}

// replay retries the transaction t, whose statement query failed with
// err, by replay (core.Retrier.Replay); again runs the failed statement
// again. It returns again's error after an equal replay, else the error
// for the caller; after a replay that ran and stopped the server's
// transaction is rolled back and t is over.
func (t *tx) replay(ctx context.Context, query string, err error, again func(ctx context.Context) error) error {
	cn := t.cn
	if config.NoRetry(ctx) {
		return err
	}
	rp := core.TxReplay{
		Record:   &cn.rec,
		Query:    query,
		Rollback: t.rollbackForReplay,
		Begin:    t.beginForReplay,
		Resend:   cn.resend,
		Retry:    again,
	}
	if live := cn.c.liveTx; live != "" {
		rp.Live = func(ctx context.Context) (bool, error) { return cn.liveTx(ctx, live) }
	}
	out := cn.r.Replay(ctx, rp, err)
	if out != nil && errors.Is(out, core.ErrReplayDiverged) {
		t.abandon(out)
	}
	return out
}

// abandon ends t after a replay that stopped: nothing of it stays on the
// server, and its Commit returns err.
func (t *tx) abandon(err error) {
	t.rp.stopped = err
	_ = t.endInner(false) // err is what the caller must see; a broken connection is noted
}

// rollbackForReplay rolls the server's transaction back; an error matters
// only when the connection broke (a transaction the server already ended
// answers one that says so).
func (t *tx) rollbackForReplay(context.Context) error {
	if err := t.endInner(false); err != nil && t.cn.isBroken() {
		return err
	}
	return nil
}

// beginForReplay begins the replay's transaction with BeginTx's options.
func (t *tx) beginForReplay(ctx context.Context) error {
	ti, err := t.cn.beginInner(ctx, t.rp.opts)
	if err != nil {
		t.cn.noteBroken(err)
		return err
	}
	t.inner = ti
	return nil
}

// resend runs recorded statement i again on the connection below and
// returns the digest of as much of its answer as the caller had seen.
func (cn *conn) resend(ctx context.Context, i int) (core.Digest, error) {
	query, vals, seen := cn.rec.Statement(i)
	args := cn.resendArgs(vals)
	if r := cn.results[i]; r != nil {
		res, err := cn.execOnly(ctx, query, args)
		if err != nil {
			return core.Digest{}, err
		}
		r.inner = res // the caller reads the new answer from now on
		return execDigest(seen, mustCount(res.RowsAffected), mustCount(res.LastInsertId)), nil
	}
	ri, err := cn.queryOnly(ctx, query, args)
	if err != nil {
		return core.Digest{}, err
	}
	d, err := readDigest(ri, seen)
	if cerr := ri.Close(); err == nil {
		err = cerr
	}
	return d, err
}

// mustCount returns a count of a result, -1 when the driver has none.
func mustCount(f func() (int64, error)) int64 {
	n, err := f()
	if err != nil {
		return -1
	}
	return n
}

// readDigest reads seen times from ri (rows, or the end) and returns the
// digest, as rows.Next computes the caller's.
func readDigest(ri driver.Rows, seen int64) (core.Digest, error) {
	var d core.Digest
	dest := make([]driver.Value, len(ri.Columns()))
	for k := int64(0); k < seen; k++ {
		err := ri.Next(dest)
		if err == io.EOF {
			d.AddEnd()
			break
		}
		if err != nil {
			return d, err
		}
		for _, v := range dest {
			d.Add(v)
		}
	}
	return d, nil
}

// resendArgs returns the recorded values as the driver's arguments.
func (cn *conn) resendArgs(vals []any) []driver.NamedValue {
	cn.replayArgs = cn.replayArgs[:0]
	for k, v := range vals {
		if nv, ok := v.(driver.NamedValue); ok {
			cn.replayArgs = append(cn.replayArgs, nv)
			continue
		}
		cn.replayArgs = append(cn.replayArgs, driver.NamedValue{Ordinal: k + 1, Value: v})
	}
	return cn.replayArgs
}

// execOnly runs query on the connection below, preparing it when the
// driver runs no statement with arguments directly.
func (cn *conn) execOnly(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if cn.execer != nil || cn.execerOld != nil {
		res, err := cn.execInner(ctx, query, args)
		if err != driver.ErrSkip {
			return res, err
		}
	}
	si, err := cn.prepareInner(ctx, query)
	if err != nil {
		return nil, err
	}
	defer si.Close()
	s := &stmt{inner: si, cn: cn, query: query}
	return s.execInner(ctx, args)
}

// queryOnly is execOnly for a query.
func (cn *conn) queryOnly(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if cn.queryer != nil || cn.queryOld != nil {
		ri, err := cn.queryInner(ctx, query, args)
		if err != driver.ErrSkip {
			return ri, err
		}
	}
	si, err := cn.prepareInner(ctx, query)
	if err != nil {
		return nil, err
	}
	s := &stmt{inner: si, cn: cn, query: query}
	ri, err := s.queryInner(ctx, args)
	if err != nil {
		_ = si.Close()
		return nil, err
	}
	return closingRows{Rows: ri, stmt: si}, nil
}

// closingRows are the rows of a statement prepared for them alone: it
// closes with them.
type closingRows struct {
	driver.Rows
	stmt driver.Stmt
}

// Close closes the rows, then the statement.
func (r closingRows) Close() error {
	err := r.Rows.Close()
	if serr := r.stmt.Close(); err == nil {
		err = serr
	}
	return err
}

// liveTx asks the server whether the transaction is live after an error
// that may have rolled back the failed statement only (the family's
// LiveTx query answers 1).
func (cn *conn) liveTx(ctx context.Context, query string) (bool, error) {
	ri, err := cn.queryOnly(ctx, query, nil)
	if err != nil {
		return false, err
	}
	defer ri.Close()
	dest := make([]driver.Value, len(ri.Columns()))
	if err := ri.Next(dest); err != nil || len(dest) == 0 {
		return false, err
	}
	switch v := dest[0].(type) {
	case int64:
		return v == 1, nil
	case bool:
		return v, nil
	case []byte:
		return string(v) == "1", nil
	case string:
		return v == "1", nil
	}
	return false, nil
}
