package crl

import (
	"context"
	"database/sql/driver"

	"github.com/crl-go/crl/core"
)

// The statement loop's path of the driver layer: a statement outside a
// transaction and a unit. When the loop has nobody to ask before an
// attempt (core.Retrier.Direct: no circuit breaker, no observer that
// times operations, no queryTimeout to arm), the layer runs the first
// attempt itself, without a closure, and hands it to the loop (core.Op
// with Ran) only to settle it: a success is counted and earns the retry
// budget, a failure is decided on and retried as the loop's own first
// failure would be. Otherwise the loop runs every attempt.

// execLoop runs query under the statement loop.
func (cn *conn) execLoop(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	ran := cn.r.Direct()
	var err error
	if ran {
		var res driver.Result
		if res, err = cn.execAttempt(ctx, query, args); err == nil {
			_ = cn.r.Run(ctx, &core.Op{Ran: true, Query: query}, nil) // nil: a success is only settled
			return res, nil
		}
	}
	return retried(ctx, cn.r, &core.Op{Query: query, Ran: ran, Err: err}, func(ctx context.Context) (driver.Result, error) {
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

// queryLoop runs query under the statement loop, its first row read
// inside each attempt (queryAttempt).
func (cn *conn) queryLoop(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	ran := cn.r.Direct()
	var err error
	if ran {
		var rs driver.Rows
		if rs, err = cn.queryAttempt(ctx, ctx, query, nil, args); err == nil {
			_ = cn.r.Run(ctx, &core.Op{Ran: true, Query: query, Rows: true}, nil)
			return rs, nil
		}
	}
	return retried(ctx, cn.r, &core.Op{Query: query, Rows: true, Ran: ran, Err: err}, func(actx context.Context) (driver.Rows, error) {
		return cn.queryAttempt(ctx, actx, query, nil, args)
	})
}

// execLoop runs the prepared statement under the statement loop.
func (s *stmt) execLoop(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	r := s.cn.r
	ran := r.Direct()
	var err error
	if ran {
		var res driver.Result
		if res, err = s.execAttempt(ctx, args); err == nil {
			_ = r.Run(ctx, &core.Op{Ran: true, Query: s.query}, nil)
			return res, nil
		}
	}
	return retried(ctx, r, &core.Op{Query: s.query, Ran: ran, Err: err}, func(ctx context.Context) (driver.Result, error) {
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
// loop, its first row read inside each attempt.
func (s *stmt) queryLoop(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	r := s.cn.r
	ran := r.Direct()
	var err error
	if ran {
		var rs driver.Rows
		if rs, err = s.queryAttempt(ctx, ctx, args); err == nil {
			_ = r.Run(ctx, &core.Op{Ran: true, Query: s.query, Rows: true}, nil)
			return rs, nil
		}
	}
	return retried(ctx, r, &core.Op{Query: s.query, Rows: true, Ran: ran, Err: err}, func(actx context.Context) (driver.Rows, error) {
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
