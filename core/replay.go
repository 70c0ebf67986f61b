package core

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/crl-go/crl/internal/tables/family"
	"github.com/crl-go/crl/internal/text/sqlscan"
)

// Transaction replay.
//
// A transaction whose statement (or COMMIT) failed with an error that
// ended the server's transaction is replayed, as Oracle's Application
// Continuity replays a request: roll back, begin again on the same
// connection, re-send every statement the transaction ran, and compare
// each answer's digest with the one the caller saw. All equal: the failed
// statement runs again and the caller never knows. One differs: the
// replay stops, and the caller gets the original error joined with
// ErrReplayDiverged. The record (TxRecord), the digest (Digest), the
// decision (which errors ended the transaction, per family) and the loop
// (Retrier.Replay) are driver-agnostic: crl's database/sql driver layer
// and pgxcrl share them, each re-sending statements its own way
// (TxReplay's functions).

// defaultReplayLimit is TxRecord's limit when Reset is given none.
const defaultReplayLimit = 1000

// The stop codes of a replay: GaveUp.Detail of a replay (GaveUp.Replay)
// that did not run or did not finish.
const (
	stopDiverged = "diverged"  // an answer differs, or a re-sent statement failed where it had succeeded
	stopBroken   = "broken"    // the connection broke (rollback or begin failed)
	stopRowsOpen = "rows_open" // a query's rows were open when the error came
	stopLimit    = "limit"     // the transaction passed the record's limit
	stopBatch    = "batch"     // a statement was a batch or a procedure call
)

// Digest is a 64-bit digest of what a caller saw of a statement's answer:
// the values added in order, each with its type, so that 1 and "1" and
// NULL differ. It allocates nothing for the values a database/sql driver
// returns (nil, int64, float64, bool, []byte, string, time.Time) and for
// the other integer types; another type is added through its printed form
// (fmt, allocating). Two digests are compared with ==. The zero value is
// the digest of nothing.
type Digest struct{ h uint64 }

// Type tags mixed in before each value.
const (
	tagNil uint64 = iota + 1
	tagInt
	tagUint
	tagFloat
	tagBool
	tagBytes
	tagString
	tagTime
	tagOther
	tagEnd
)

// mix adds one 64-bit word.
func (d *Digest) mix(w uint64) {
	h := (d.h ^ w) * 0x9e3779b97f4a7c15
	d.h = bits.RotateLeft64(h, 31) * 0xbf58476d1ce4e5b9
}

// mixString adds s's length and bytes, eight at a time.
func (d *Digest) mixString(s string) {
	d.mix(uint64(len(s)))
	for len(s) >= 8 {
		d.mix(uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56)
		s = s[8:]
	}
	// The last 0 to 7 bytes in one word: 4, 2 and 1 at a time (each a
	// single load), at fixed places, which the length mixed first makes
	// unambiguous.
	var w uint64
	if len(s) >= 4 {
		w = uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24
		s = s[4:]
	}
	if len(s) >= 2 {
		w |= (uint64(s[0]) | uint64(s[1])<<8) << 32
		s = s[2:]
	}
	if len(s) == 1 {
		w |= uint64(s[0]) << 48
	}
	d.mix(w)
}

// Add adds v, one value the caller saw: a column of a row, a count of
// rows affected, an insert ID. A []byte is read and not kept.
func (d *Digest) Add(v any) {
	// The values drivers return most, each a comparison of the type word,
	// before the switch's search.
	if x, ok := v.(int64); ok {
		d.mix(tagInt)
		d.mix(uint64(x))
		return
	}
	if x, ok := v.(string); ok {
		d.mix(tagString)
		d.mixString(x)
		return
	}
	switch x := v.(type) {
	case nil:
		d.mix(tagNil)
	case int64:
		d.mix(tagInt)
		d.mix(uint64(x))
	case int:
		d.mix(tagInt)
		d.mix(uint64(x))
	case int32:
		d.mix(tagInt)
		d.mix(uint64(x))
	case uint64:
		d.mix(tagUint)
		d.mix(x)
	case uint32:
		d.mix(tagUint)
		d.mix(uint64(x))
	case float64:
		d.mix(tagFloat)
		d.mix(math.Float64bits(x))
	case bool:
		d.mix(tagBool)
		if x {
			d.mix(1)
		} else {
			d.mix(0)
		}
	case []byte:
		d.mix(tagBytes)
		d.mixString(string(x)) // converted for reading only: no copy
	case string:
		d.mix(tagString)
		d.mixString(x)
	case time.Time:
		_, off := x.Zone()
		d.mix(tagTime)
		d.mix(uint64(x.Unix()))
		d.mix(uint64(x.Nanosecond()) | uint64(uint32(off))<<32)
	default:
		d.mix(tagOther)
		d.mixString(fmt.Sprintf("%T %v", v, v))
	}
}

// AddEnd adds the end of a query's rows (its io.EOF), which the caller saw:
// a replay that finds one more row differs.
func (d *Digest) AddEnd() { d.mix(tagEnd) }

// TxRecord is the record of one transaction's statements: for its
// replay, each statement that succeeded — its text, its arguments
// (copied: callers reuse their buffers) and the digest of what the caller
// saw of its answer — and, for the retry of the unit the transaction
// runs in, the statement whose error ended it (Fail). Its owner keeps
// one per connection and Resets it at each BEGIN, so that recording
// allocates nothing per statement once its arrays have grown, beyond the
// copies of []byte arguments the owner makes. It is not safe for
// concurrent use (a connection runs one statement at a time). The zero
// value is an empty record with the default limit.
type TxRecord struct {
	stmts     []recordedStatement
	args      []any // every statement's arguments, one after the other
	limit     int
	over      bool // a statement was refused for the limit: not replayable
	open      int  // queries whose rows are open
	failed    string
	failedErr error
}

// recordedStatement is one statement of a TxRecord.
type recordedStatement struct {
	query    string
	from, to int   // its arguments: args[from:to]
	seen     int64 // what the caller saw (see Saw)
	digest   Digest
}

// Reset empties the record for a new transaction of at most limit
// statements (≤ 0: the default 1000). References to the old arguments
// are dropped.
func (t *TxRecord) Reset(limit int) {
	// A transaction has a few: stores, backwards so that the compiler
	// does not make the loop a call of the runtime's clear, which costs
	// more than a few stores, through a local slice, whose length and
	// array are not loaded again after each store.
	args := t.args
	for i := len(args) - 1; i >= 0; i-- {
		args[i] = nil
	}
	if limit <= 0 {
		limit = defaultReplayLimit
	}
	t.args, t.stmts = t.args[:0], t.stmts[:0]
	t.limit, t.over, t.open = limit, false, 0
	t.failed, t.failedErr = "", nil
}

// Add records a statement that succeeded and returns its index and a
// slice of n values for its arguments, which the caller fills with
// copies (a []byte cloned) before the next call. Past the limit it
// records nothing, returns -1 and nil, and the transaction is no longer
// replayable.
func (t *TxRecord) Add(query string, n int) (int, []any) {
	i, from := len(t.stmts), len(t.args)
	if i >= t.limit || i == cap(t.stmts) || cap(t.args)-from < n {
		return t.addGrown(query, n)
	}
	// Resliced within capacity, not appended: past its length the array
	// holds only zeros (Reset cleared what a transaction wrote), so there
	// is nothing to clear.
	t.args = t.args[:from+n]
	t.stmts = t.stmts[:i+1]
	t.stmts[i] = recordedStatement{query: query, from: from, to: from + n}
	return i, t.args[from : from+n : from+n]
}

// addGrown is Add past the limit, or when an array must grow first.
func (t *TxRecord) addGrown(query string, n int) (int, []any) {
	if t.limit <= 0 { // the zero value, never Reset
		t.limit = defaultReplayLimit
	}
	if len(t.stmts) >= t.limit {
		t.over = true
		return -1, nil
	}
	t.args = slices.Grow(t.args, n)
	t.stmts = slices.Grow(t.stmts, 1)
	return t.Add(query, n)
}

// Len returns how many statements the record holds.
func (t *TxRecord) Len() int { return len(t.stmts) }

// Statement returns statement i's text and arguments, and what the caller
// saw of its answer (Saw's seen).
func (t *TxRecord) Statement(i int) (query string, args []any, seen int64) {
	s := &t.stmts[i]
	return s.query, t.args[s.from:s.to:s.to], s.seen
}

// Saw sets what the caller saw so far of statement i's answer: seen, in
// its owner's terms (the driver layer: for a query, how many times the
// caller read a row or the end; for an exec, which of the counts it
// read), and the digest of those values. A replay re-sends the statement,
// reads as much of the new answer as seen says, and compares digests.
// i < 0 (a statement Add refused) is ignored. seen = math.MinInt64 says
// the caller saw an answer a replay cannot read again (a result set after
// the first): the transaction is then not replayed (stop "batch"), as
// for a batch's text; every other value is the owner's to define.
func (t *TxRecord) Saw(i int, seen int64, d Digest) {
	if i >= 0 && i < len(t.stmts) {
		t.stmts[i].seen, t.stmts[i].digest = seen, d
	}
}

// Fail records that query, a statement of the transaction, failed with
// err: it is the statement whose error ended the transaction, unless it
// is a ROLLBACK (to a savepoint, or of the transaction) after an earlier
// failure, which that failure caused (GORM rolls back to its savepoint
// after the statement that failed, and that rollback fails too when the
// server already ended the transaction, as a deadlock victim's). A
// failed statement is not one of the record's statements: its effect
// was rolled back, and the caller saw its error.
func (t *TxRecord) Fail(query string, err error) {
	if t.failedErr == nil || !sqlscan.IsRollback(query) {
		t.failed, t.failedErr = query, err
	}
}

// Failed returns the statement whose error ended the transaction and that
// error ("", nil when none did).
func (t *TxRecord) Failed() (query string, err error) { return t.failed, t.failedErr }

// RowsOpened notes a query whose rows are open; RowsClosed, that they
// closed. A transaction whose error came while rows were open is not
// replayed: the caller is reading an answer the replay cannot hand it.
func (t *TxRecord) RowsOpened() { t.open++ }

// RowsClosed notes that rows RowsOpened noted closed.
func (t *TxRecord) RowsClosed() {
	if t.open > 0 {
		t.open--
	}
}

// blocked returns why the transaction cannot be replayed after its
// statement failed ("" when it can): the error path's only scan of the
// recorded texts.
func (t *TxRecord) blocked(failed string) string {
	switch {
	case t.over:
		return stopLimit
	case t.open > 0:
		return stopRowsOpen
	case failed != "COMMIT" && unsafeToResend(failed):
		return stopBatch
	}
	for i := range t.stmts {
		if t.stmts[i].seen == math.MinInt64 || unsafeToResend(t.stmts[i].query) {
			return stopBatch
		}
	}
	return ""
}

// unsafeToResend reports a batch or a procedure call, whose answer a
// digest does not cover (output parameters, several results).
func unsafeToResend(query string) bool {
	s := shapeOf(query)
	return s.statements > 1 || s.procedure
}

// TxReplay is what Retrier.Replay needs of one failed transaction: its
// record, the failed statement, and how to act on the connection. Every
// function runs on the connection the transaction ran on, with the
// replay's context.
type TxReplay struct {
	// Record is the transaction's record. Required.
	Record *TxRecord
	// Query is the failed statement's text, "COMMIT" for the COMMIT: the
	// rule's query filter is checked against it.
	Query string
	// Rollback rolls the server's transaction back. Its error ends the
	// replay (the connection broke): return nil for an error that only
	// says there was nothing to roll back.
	Rollback func(ctx context.Context) error
	// Begin begins a new transaction with the original's options. Its
	// error ends the replay.
	Begin func(ctx context.Context) error
	// Resend runs recorded statement i again (TxRecord.Statement), reads
	// as much of its answer as the caller had seen, and returns the digest
	// of it, computed as the one given to Saw was.
	Resend func(ctx context.Context, i int) (Digest, error)
	// Retry runs the failed statement (or the COMMIT) again and keeps its
	// answer for the caller: its error is the statement's.
	Retry func(ctx context.Context) error
	// Live reports whether the server's transaction is still live after an
	// error that may have rolled back the failed statement only (the
	// family's LiveTx). nil: never (it was rolled back whole).
	Live func(ctx context.Context) (bool, error)
}

// replayStop is an attempt's outcome that ends the loop of a replay
// whatever the rules say (decide reads it first): a divergence, or the
// answer of the failed statement run again, which is the caller's.
type replayStop struct {
	err    error // the driver's error of the attempt (the statement's answer for stopAnswer)
	reason error
	code   string
}

// stopAnswer is replayStop.code of an answer the caller is to get as it
// is: the failed statement ran again and failed with an error that is its
// own answer.
const stopAnswer = "answer"

func (s *replayStop) Error() string   { return s.err.Error() }
func (s *replayStop) Unwrap() []error { return []error{s.reason, s.err} }

// Replay is the retry of a transaction whose statement t.Query (or its
// COMMIT) failed with err, by replay: it returns nil when the failed
// statement ran again after an equal replay (its answer kept by
// t.Retry), else the error for the caller.
//
// Which errors are replayed is the family table's word: one that ended
// the server's transaction (SQL Server 1205, MySQL 1213, every PostgreSQL
// error), and that a rule retries, its query filter checked against
// t.Query. One that rolled back the statement only (MySQL 1205, SQL
// Server 1222) while t.Live says the transaction is live runs t.Retry
// alone, as a statement retry. Any other error is returned unchanged.
//
// The replay is a transaction retry (KindTransaction, events with
// Replay set): the rule's wait, the budget and the circuit breaker are
// asked before each replay. A transaction that cannot be replayed (rows
// open, the record's limit passed, a batch or procedure call recorded)
// gets err unchanged, after a GaveUp whose Detail says why. A replay that
// ran and diverged returns err joined with ErrReplayDiverged (a GaveUp
// whose Reason is ErrReplayDiverged); one that gave up for the rules
// (count, budget, deadline) returns a *RetryError whose Err is the last
// driver error joined with ErrReplayDiverged. The caller rolls the
// server's transaction back after any error but the failed statement's
// own answer (a replayStop with stopAnswer is unwrapped to it here).
func (r *Retrier) Replay(ctx context.Context, t TxReplay, err error) error {
	end := txEndOf(err, t.Query == "COMMIT")
	if end == endsNothing {
		return err
	}
	if end == endsStatement && t.Live != nil {
		if live, lerr := t.Live(ctx); lerr == nil && live {
			return r.replayLoop(ctx, KindStatement, t.Query, err, func(ctx context.Context) (string, error) {
				return t.Query, statementAgain(ctx, t)
			})
		}
	}
	if why := t.Record.blocked(t.Query); why != "" {
		r.replaySkipped(ctx, t.Query, err, why)
		return err
	}
	retries := func(query string, err error) bool {
		return r.policy.Load().decide(KindTransaction, query, 1, err, false).Reason == nil
	}
	return r.replayLoop(ctx, KindTransaction, t.Query, err, func(ctx context.Context) (string, error) {
		return t.attempt(ctx, retries)
	})
}

// statementAgain runs the failed statement alone again inside the live
// transaction: an error that rolled back the statement only again is
// retried by the loop; any other ends it, as the statement's answer.
func statementAgain(ctx context.Context, t TxReplay) error {
	err := t.Retry(ctx)
	if err == nil || txEndOf(err, false) == endsStatement {
		return err
	}
	return &replayStop{err: err, reason: ErrNotRetryable, code: stopAnswer}
}

// attempt is one replay: roll back, begin, re-send and compare, run the
// failed statement. It returns the statement whose error the loop decides
// on: an error that ended the transaction again and that a rule retries
// (retries) is the loop's to decide on; any other, on a re-sent statement,
// is a divergence (the caller saw it succeed), and on the failed
// statement, that statement's answer.
func (t TxReplay) attempt(ctx context.Context, retries func(query string, err error) bool) (string, error) {
	if err := t.Rollback(ctx); err != nil {
		return t.Query, &replayStop{err: err, reason: ErrReplayDiverged, code: stopBroken}
	}
	if err := t.Begin(ctx); err != nil {
		return t.Query, &replayStop{err: err, reason: ErrReplayDiverged, code: stopBroken}
	}
	rec := t.Record
	for i := range rec.stmts {
		d, err := t.Resend(ctx, i)
		if err != nil {
			if q := rec.stmts[i].query; txEndOf(err, false) == endsTx && retries(q, err) {
				return q, err // the loop decides: another replay, or give up
			}
			return rec.stmts[i].query, &replayStop{err: err, reason: ErrReplayDiverged, code: stopDiverged}
		}
		if d != rec.stmts[i].digest {
			return rec.stmts[i].query, &replayStop{err: errAnswerDiffers, reason: ErrReplayDiverged, code: stopDiverged}
		}
	}
	err := t.Retry(ctx)
	if err != nil && (txEndOf(err, t.Query == "COMMIT") != endsTx || !retries(t.Query, err)) {
		return t.Query, &replayStop{err: err, reason: ErrNotRetryable, code: stopAnswer}
	}
	return t.Query, err
}

// errAnswerDiffers is the attempt's error when a re-sent statement's
// answer differs from the one the caller saw.
var errAnswerDiffers = errors.New("core: a re-sent statement's answer differs from the one the caller saw")

// replayLoop runs the replay's retries under the rules after the first
// failure err of query, through the one loop (run), as Run runs an Op
// whose first attempt already ran: the breaker asked before the first,
// the budget before each, the events marked Replay. call returns, with
// its error, the statement whose error the loop decides on.
func (r *Retrier) replayLoop(ctx context.Context, kind Kind, query string, err error, call func(ctx context.Context) (string, error)) error {
	if r.refresh != nil {
		r.refresh()
	}
	o := operation{ctx: ctx, kind: kind, query: query, replay: true}
	p := r.policy.Load()
	d := p.decide(kind, query, 1, err, false)
	if d.Reason != nil || r.optedOut(ctx) {
		r.budget.settle(&d)
		return err
	}
	r.begin(&o)
	pm, aerr := r.breaker.allow()
	if aerr != nil {
		r.giveUp(&o, 1, ErrCircuitOpen, err, nil, "the circuit breaker refused the replay")
		return err
	}
	failed := query
	out := r.run(&o, p, pm, attempts{
		fn: func(ctx context.Context) (err error) {
			failed, err = call(ctx)
			return err
		},
		failed: func() string { return failed },
		l:      limitNone,
	}, &err)
	return replayResult(out, err)
}

// replayResult is what the caller of Replay gets for the loop's outcome
// out after the first failure first.
func replayResult(out, first error) error {
	if out == nil {
		return nil
	}
	var s *replayStop
	if errors.As(out, &s) {
		if s.code == stopAnswer {
			return s.err
		}
		return errors.Join(first, ErrReplayDiverged)
	}
	var re *RetryError
	if errors.As(out, &re) && re.Attempts > 1 {
		c := *re
		c.Err = errors.Join(re.Err, ErrReplayDiverged)
		return &c
	}
	return out
}

// replaySkipped reports a transaction that a rule would have replayed
// and that cannot be: a GaveUp whose Detail is why, the budget charged as
// for a retryable failure not retried. Nothing is reported when no rule
// retries err.
func (r *Retrier) replaySkipped(ctx context.Context, query string, err error, why string) {
	r.failedOnce(ctx, GaveUp{Kind: KindTransaction, Query: query, Reason: ErrNotRetryable, Err: err, Replay: true, Detail: why})
}

// txEnd is what an error did to the server's transaction.
type txEnd uint8

const (
	endsNothing   txEnd = iota // the transaction is live (or the family is unknown)
	endsTx                     // the server rolled the transaction back (or aborted it)
	endsStatement              // the statement only, unless a server setting says otherwise
)

// txEnds is the family table's EndsTx and EndsStatement as a lookup. It
// is never written after package initialisation.
var txEnds = func() map[familyToken]txEnd {
	m := map[familyToken]txEnd{}
	for _, f := range family.All() {
		p := f.Profile()
		for _, row := range [...]struct {
			toks []string
			end  txEnd
		}{{p.EndsTx, endsTx}, {p.EndsStatement, endsStatement}} {
			for _, tok := range row.toks {
				if t, err := parseToken(tok); err == nil { // TestClassTableParses-style check in replay_test.go
					m[familyToken{f, t}] = row.end
				}
			}
		}
	}
	return m
}()

// txEndOf is what err did to the server's transaction, by its family's
// row of the table. At COMMIT (commit) only the errors the table names
// ended it: any other may have come after the server committed (an
// administrator's shutdown), and a replay could apply the work twice. A
// broken connection ends nothing a replay could repair on it.
func txEndOf(err error, commit bool) txEnd {
	f := factsOf(err, false)
	if f.family == familyNone || f.badConn() {
		return endsNothing
	}
	if f.family.Profile().AnyErrorEndsTx && !commit {
		return endsTx
	}
	if t, ok := f.errorToken(); ok {
		return txEnds[familyToken{f.family, t}]
	}
	return endsNothing
}
