package crl

import (
	"context"
	"database/sql/driver"
	"unsafe"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

// The statement loop's path of the driver layer: a statement outside a
// transaction and a unit. On the path most statements take (ordinary:
// nothing to check on their own, and a loop with nobody to ask before an
// attempt, core.Retrier.Direct) the layer runs the first attempt itself,
// without a closure, and hands it to the loop (core.Op with Ran) only
// when it failed, or when its success must still be counted or earn the
// retry budget. Every other statement runs under the loop whole, each
// of its conditions checked on its own (conn.ExecContext and the rest).
//
// The test is cheap on purpose: the connection's reasons are one word
// (detour.go), the text is known by its address or its bytes (seenPlain),
// the unit is one ctx.Value, and the pool's reasons are two atomic loads
// (core.Retrier.DirectLean) when nobody is to be called or counted. The
// Execs and the queries write the test's common case out, so that an
// Exec's path is one frame that calls ctx.Value and the driver and
// nothing else of the layer's, and a query's adds only its rows.

// ordinary reports whether the statement query with n arguments, run by
// the connection with ctx, takes the direct path: the connection has
// the context forms, the statement is not answered driver.ErrSkip for
// its arguments, it runs outside a transaction (begun by BeginTx or as
// text) on a connection that is not broken (no bit of cn.detour holds
// it: one load when none is set), its text was seen before and begins no
// transaction, it runs in no unit, and the loop has nobody to ask before
// the attempt (core.Retrier.Direct, whose settle it returns; an injected
// fault is such a one: the faults hold the Retrier).
//
// conn.ExecContext and conn.QueryContext write its common case out (keep
// the three alike).
func (cn *conn) ordinary(ctx context.Context, query string, n int) (ok, settle bool) {
	if cn.detour != 0 {
		return cn.ordinaryDetour(ctx, query, n)
	}
	if !cn.seenPlain(query) || config.UnitOf(ctx) != nil {
		return false, false
	}
	return cn.direct()
}

// ordinaryDetour is ordinary on a connection with a bit of cn.detour
// set: no at once for a bit that always holds (a transaction's statements
// among others), else ordinaryHeld decides. It inlines, in ordinary and
// in conn.ExecContext and conn.QueryContext, which write ordinary's
// common case out.
func (cn *conn) ordinaryDetour(ctx context.Context, query string, n int) (ok, settle bool) {
	if cn.detour&detourAlways == 0 {
		ok, settle = cn.ordinaryHeld(ctx, query, n)
	}
	return ok, settle
}

// ordinaryHeld is ordinary on a connection with a bit of cn.detour set
// that may let the statement through (detourSkips, detourAsk): out of
// line, so that ordinary's frame keeps only what its common case needs.
func (cn *conn) ordinaryHeld(ctx context.Context, query string, n int) (ok, settle bool) {
	if cn.held(cn.detour&^argless(n)) || !cn.seenPlain(query) || config.UnitOf(ctx) != nil {
		return false, false
	}
	return cn.direct()
}

// direct is cn.r.Direct, its lean case inlined.
func (cn *conn) direct() (ok, settle bool) {
	if ok, settle, lean := cn.r.DirectLean(); lean {
		return ok, settle
	}
	return cn.r.Direct()
}

// argless is detourSkips for a statement without arguments (n == 0),
// which the bit does not hold, else nothing.
func argless(n int) detour {
	if n == 0 {
		return detourSkips
	}
	return 0
}

// seenPlain reports whether query is one of the last two texts the
// connection ran (mayBegin) and begins no transaction. The first of
// them (seen[0]), when query is that string again (a constant, or a
// string the caller keeps), is known by its bytes' address at the cost
// of a comparison; the other, or a text built anew for each call (GORM's,
// an ORM's), by content (seenText: a length that differs ends the
// comparison, the same address too). It inlines.
func (cn *conn) seenPlain(query string) bool {
	if s := &cn.seen[0]; sameText(s.text, query) {
		return !s.begins
	}
	i := cn.seenText(query)
	return i >= 0 && !cn.seen[i].begins
}

// sameText reports whether a and b are the same bytes in memory.
func sameText(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

// seenText returns the index in cn.seen of the text whose content is
// query's, or -1. The entry keeps query from now on: the caller's string
// of the call before is not held past it, and what the statement asks of
// the memo next (wantsFirstRow) is known by address again.
func (cn *conn) seenText(query string) int {
	for i := range cn.seen {
		if query == cn.seen[i].text {
			cn.seen[i].text = query
			return i
		}
	}
	return -1
}

// wantsFirstRow is cn.r.WantsFirstRow(query), remembered with query's
// entry in cn.seen (core.Retrier.WantsFirstRowMemo) when it has one, as
// it has on the paths of a query (seenPlain, mayBegin): known by address
// on the direct path, which seenPlain just took; by content on the
// statement loop's, whose textControl compares without keeping query.
func (cn *conn) wantsFirstRow(query string) bool {
	switch s := &cn.seen; {
	case sameText(s[0].text, query):
		return cn.r.WantsFirstRowMemo(query, &s[0].first)
	case sameText(s[1].text, query):
		return cn.r.WantsFirstRowMemo(query, &s[1].first)
	}
	if i := cn.seenText(query); i >= 0 {
		return cn.r.WantsFirstRowMemo(query, &cn.seen[i].first)
	}
	return cn.r.WantsFirstRow(query)
}

// settle gives the loop a statement whose first attempt, run directly,
// succeeded, when Direct said it must (settle): counted, and the budget
// earns.
func (cn *conn) settle(ctx context.Context, query string, rows bool) {
	_ = cn.r.Run(ctx, &core.Op{Ran: true, Query: query, Rows: rows}, nil) // nil: no attempt runs
}

// execDirectEnd ends an Exec whose first attempt ran directly and
// returned res and err, when it failed (execRetried) or its success is to
// be settled.
func (cn *conn) execDirectEnd(ctx context.Context, query string, args []driver.NamedValue, res driver.Result, err error) (driver.Result, error) {
	if err != nil {
		return cn.execRetried(ctx, query, args, err)
	}
	cn.settle(ctx, query, false)
	return res, nil
}

// execRetried hands an Exec's first attempt, run directly and failed
// with err, to the statement loop.
func (cn *conn) execRetried(ctx context.Context, query string, args []driver.NamedValue, err error) (driver.Result, error) {
	cn.noteSkip(err, args)
	cn.noteBroken(err)
	return retried(ctx, cn.r, &core.Op{Query: query, Ran: true, Err: err}, func(ctx context.Context) (driver.Result, error) {
		return cn.execAttempt(ctx, query, args)
	})
}

// queryRetried hands a query's first attempt, run directly by the
// prepared statement s, or by the connection when s is nil (their
// QueryContext), and failed with err, to the statement loop.
func (cn *conn) queryRetried(ctx context.Context, query string, s *stmt, args []driver.NamedValue, err error) (driver.Rows, error) {
	cn.noteBroken(err)
	return retried(ctx, cn.r, &core.Op{Query: query, Rows: true, Ran: true, Err: err}, func(actx context.Context) (driver.Rows, error) {
		if s != nil {
			return s.queryAttempt(ctx, actx, args)
		}
		return cn.queryAttempt(ctx, actx, query, nil, args)
	})
}

// execLoop runs query under the statement loop, every attempt through
// it.
func (cn *conn) execLoop(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return retried(ctx, cn.r, &core.Op{Query: query}, func(ctx context.Context) (driver.Result, error) {
		return cn.execAttempt(ctx, query, args)
	})
}

// execAttempt is one attempt of an Exec under the statement loop.
func (cn *conn) execAttempt(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := cn.revive(ctx); err != nil {
		return nil, err
	}
	res, err := cn.execInner(ctx, query, args)
	if err != nil {
		cn.noteBroken(err)
	}
	return res, err
}

// queryLoop runs query under the statement loop, every attempt through
// it, its first row read inside each attempt (queryAttempt).
func (cn *conn) queryLoop(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return retried(ctx, cn.r, &core.Op{Query: query, Rows: true}, func(actx context.Context) (driver.Rows, error) {
		return cn.queryAttempt(ctx, actx, query, nil, args)
	})
}

// ordinary is conn.ordinary for an execution of the prepared statement:
// prepared on the connection it runs on (not replaced since), its text
// begins no transaction, and the connection's checks of the session
// (detourSession), the unit and the Retrier's hold. stmt.ExecContext and
// stmt.QueryContext write its common case out (keep the three alike).
func (s *stmt) ordinary(ctx context.Context) (ok, settle bool) {
	cn := s.cn
	if cn.detour&detourSession != 0 {
		return s.ordinaryHeld(ctx)
	}
	if s.mayBegin || s.gen != cn.gen || config.UnitOf(ctx) != nil {
		return false, false
	}
	return cn.direct()
}

// ordinaryHeld is stmt.ordinary on a connection with a detourSession bit
// set.
func (s *stmt) ordinaryHeld(ctx context.Context) (ok, settle bool) {
	cn := s.cn
	if cn.held(cn.detour&detourSession) || s.mayBegin || s.gen != cn.gen || config.UnitOf(ctx) != nil {
		return false, false
	}
	return cn.direct()
}

// execDirectEnd ends an execution whose first attempt ran directly and
// returned res and err, when it failed (execRetried) or its success is to
// be settled.
func (s *stmt) execDirectEnd(ctx context.Context, args []driver.NamedValue, res driver.Result, err error) (driver.Result, error) {
	if err != nil {
		return s.execRetried(ctx, args, err)
	}
	s.cn.settle(ctx, s.query, false)
	return res, nil
}

// execRetried hands an execution's first attempt, run directly and
// failed with err, to the statement loop.
func (s *stmt) execRetried(ctx context.Context, args []driver.NamedValue, err error) (driver.Result, error) {
	s.cn.noteBroken(err)
	return retried(ctx, s.cn.r, &core.Op{Query: s.query, Ran: true, Err: err}, func(ctx context.Context) (driver.Result, error) {
		return s.execAttempt(ctx, args)
	})
}

// execLoop runs the prepared statement under the statement loop, every
// attempt through it.
func (s *stmt) execLoop(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return retried(ctx, s.cn.r, &core.Op{Query: s.query}, func(ctx context.Context) (driver.Result, error) {
		return s.execAttempt(ctx, args)
	})
}

// execAttempt is one attempt of the prepared statement's Exec under the
// statement loop.
func (s *stmt) execAttempt(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if err := s.revive(ctx); err != nil {
		return nil, err
	}
	res, err := s.execInner(ctx, args)
	if err != nil {
		s.cn.noteBroken(err)
	}
	return res, err
}

// queryLoop runs the prepared statement's query under the statement
// loop, every attempt through it, its first row read inside each.
func (s *stmt) queryLoop(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return retried(ctx, s.cn.r, &core.Op{Query: s.query, Rows: true}, func(actx context.Context) (driver.Rows, error) {
		return s.queryAttempt(ctx, actx, args)
	})
}

// queryAttempt is one attempt of the prepared statement's query under
// the statement loop (conn.queryAttempt), prepared again first when its
// connection was replaced.
func (s *stmt) queryAttempt(ctx, actx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if err := s.revive(actx); err != nil {
		return nil, err
	}
	return s.cn.queryAttempt(ctx, actx, s.query, s, args)
}

// retried runs op, a statement, under r's statement loop with fn as each
// of its attempts (the retries only, when op.Ran), keeping the value of
// the attempt that succeeded; on failure it is the zero value.
func retried[T any](ctx context.Context, r *core.Retrier, op *core.Op, fn func(ctx context.Context) (T, error)) (T, error) {
	var out T
	err := r.Run(ctx, op, func(ctx context.Context) error {
		v, err := fn(ctx)
		if err == nil {
			out = v
		}
		return err
	})
	return out, err
}
