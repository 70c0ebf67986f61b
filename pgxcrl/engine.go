package pgxcrl

import (
	"context"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

// Every call of pgxcrl into crl's engine sits in this file: the
// statement loop (Retrier.Run), the connection loop
// (Retrier.Connect), the transaction loop (Retrier.DoTx), the report
// of an error met after a query's first row (Retrier.Unretried) and the
// record of a unit of work (config.Unit: crl.Retry's). The rules, the
// classification of errors (core reads *pgconn.PgError's SQLSTATE), the
// budget, the breaker and the observer are the Runtime's, as for a
// database/sql pool that crl opened.

// execLoop runs one Exec under the statement loop of r on l; in a unit
// (ctx carries one), once (bounded by a positive queryTimeout, as an
// attempt is), its outcome recorded there.
func execLoop(ctx context.Context, r *core.Retrier, l *lease, sql string, args []any) (pgconn.CommandTag, error) {
	if u := unitOf(ctx); u != nil {
		sctx, end := statementContext(ctx, r, false)
		tag, err := l.exec(sctx, sql, args)
		if end != nil {
			end(err)
		}
		u.Record(r, sql, err)
		return tag, err
	}
	var tag pgconn.CommandTag
	err := r.Run(ctx, &core.Op{Query: sql}, func(actx context.Context) error {
		t, err := l.exec(actx, sql, args)
		if err == nil {
			tag = t
		}
		return err
	})
	return tag, err
}

// queryLoop runs one Query under the statement loop of r: each attempt
// runs the query on rs's lease and reads its first row (rows.attempt);
// the attempt's context, bounded by a positive queryTimeout, lives while
// the rows are read. In a unit, one attempt, bounded the same way, its
// outcome recorded there.
func queryLoop(ctx context.Context, r *core.Retrier, rs *rows, sql string, args []any) error {
	if u := unitOf(ctx); u != nil {
		actx, end := statementContext(ctx, r, true)
		err := rs.attempt(ctx, actx, sql, args)
		if end != nil {
			end(err)
		}
		u.Record(r, sql, err)
		return err
	}
	return r.Run(ctx, &core.Op{Query: sql, Rows: true}, func(actx context.Context) error {
		return rs.attempt(ctx, actx, sql, args)
	})
}

// statementContext is the context of a statement that runs once,
// outside the statement loop (in a transaction, in a unit): bounded by a
// positive queryTimeout, as an attempt of the loop is, while its rows
// are read too when rows says it has some
// (core.Retrier.StatementContext). end, nil when nothing bounds it, is
// called once the statement returned, with its error.
func statementContext(ctx context.Context, r *core.Retrier, rows bool) (sctx context.Context, end func(err error)) {
	if !r.BoundsStatements() { // inlined: the cost of a statement without a bound
		return ctx, nil
	}
	return r.StatementContext(ctx, rows)
}

// unretried reports an error met after a query's first row: not retried,
// charged to the budget and told to the observer as the engine says; in
// a unit, recorded there (the unit runs again whole).
func unretried(ctx context.Context, r *core.Retrier, sql string, err error) {
	if u := unitOf(ctx); u != nil {
		u.Record(r, sql, err)
		return
	}
	r.Unretried(ctx, sql, err)
}

// unitOf is the unit of work ctx carries, nil when none.
func unitOf(ctx context.Context) *config.Unit { return config.UnitOf(ctx) }

// connectLoop runs the connection loop of r around acquire, whose first
// attempt already ran and failed with first (see Pool.acquire): every
// later attempt is a new login of the pool.
func connectLoop(ctx context.Context, r *core.Retrier, first error, acquire func(ctx context.Context) error) error {
	return r.Connect(ctx, func(actx context.Context) error {
		if first != nil {
			err := first
			first = nil
			return err
		}
		return acquire(actx)
	})
}

// txLoop runs fn, a whole transaction, under the transaction loop of r.
func txLoop(ctx context.Context, r *core.Retrier, fn func(ctx context.Context) (failedQuery string, err error)) error {
	return r.DoTx(ctx, fn)
}

// failover reports whether err is of the class failover on its family
// (core.Retrier.Failover: PostgreSQL 25006, 57P01, …): the connection
// reached a server that cannot serve it now.
func failover(p *Pool, err error) bool { return p.rt.Retrier().Failover(err) }

// commitFailed is what a failed COMMIT means for the transaction loop
// (core.CommitFailed): an error the server answered, unchanged; any
// other, whose outcome is unknown, one that matches core.ErrCommitUnknown
// and is never retried.
func commitFailed(err error) error { return core.CommitFailed(err) }

// replayTx runs core's replay of a transaction whose statement t.Query
// failed with err (Retrier.Replay): the rule, budget, breaker and events
// of a transaction retry.
func replayTx(ctx context.Context, r *core.Retrier, t core.TxReplay, err error) error {
	return r.Replay(ctx, t, err)
}
