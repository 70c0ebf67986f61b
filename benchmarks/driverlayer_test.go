package benchmarks

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/XSAM/otelsql"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
)

// layerPool is a pool over the in-memory driver's connector, opened by
// one of the driver wrappers compared (or by database/sql alone).
type layerPool struct {
	name string
	db   *sql.DB
}

// layerPools opens, over the same in-memory connector: database/sql
// alone (plain), crl's driver layer with its default settings (crl) and
// with rules (crl-rules), otelsql's wrapper with no-op tracer and
// meter providers (otelsql), the peer, and the least a wrapper does
// (wrapper: passConnector, every call handed on), the floor.
func layerPools(tb testing.TB) []layerPool {
	tb.Helper()
	open := func(db *sql.DB, err error) *sql.DB {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { db.Close() })
		return db
	}
	return []layerPool{
		{"plain", open(sql.OpenDB(memConnector{}), nil)},
		{"crl", open(crl.OpenDB(memConnector{}, "crlmem"))},
		{"crl-rules", open(crl.OpenDB(memConnector{}, "crlmem", crl.WithRetryExec(rules)))},
		{"otelsql", open(otelsql.OpenDB(memConnector{},
			otelsql.WithTracerProvider(tracenoop.NewTracerProvider()),
			otelsql.WithMeterProvider(metricnoop.NewMeterProvider())), nil)},
		{"wrapper", open(sql.OpenDB(passConnector{memConnector{}}), nil)},
	}
}

// layerStatement is one statement run through a pool.
type layerStatement struct {
	name string
	// prepare returns the function that runs the statement once on db.
	prepare func(tb testing.TB, db *sql.DB) func(ctx context.Context) error
}

// The statements, with arguments as real ones have: the wrappers see
// each argument (database/sql asks their NamedValueChecker).
const (
	layerUpdate = "UPDATE accounts SET balance = balance + ? WHERE id = ?"
	layerQuery  = "SELECT id, name FROM orders WHERE id = ?"
)

// layerStatements are the statements compared: ExecContext, QueryContext
// with every row read, QueryRowContext with its row scanned, and a
// prepared statement's ExecContext and QueryContext.
var layerStatements = []layerStatement{
	{"Exec", func(_ testing.TB, db *sql.DB) func(context.Context) error {
		return func(ctx context.Context) error { _, err := db.ExecContext(ctx, layerUpdate, 1, 1); return err }
	}},
	{"Query", func(_ testing.TB, db *sql.DB) func(context.Context) error {
		return func(ctx context.Context) error { return readAll(db.QueryContext(ctx, layerQuery, 7)) }
	}},
	{"QueryRow", func(_ testing.TB, db *sql.DB) func(context.Context) error {
		return func(ctx context.Context) error {
			var (
				id   int64
				name string
			)
			return db.QueryRowContext(ctx, layerQuery, 7).Scan(&id, &name)
		}
	}},
	{"StmtExec", func(tb testing.TB, db *sql.DB) func(context.Context) error {
		stmt, err := db.PrepareContext(context.Background(), layerUpdate)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { stmt.Close() })
		return func(ctx context.Context) error { _, err := stmt.ExecContext(ctx, 1, 1); return err }
	}},
	{"StmtQuery", func(tb testing.TB, db *sql.DB) func(context.Context) error {
		stmt, err := db.PrepareContext(context.Background(), layerQuery)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { stmt.Close() })
		return func(ctx context.Context) error { return readAll(stmt.QueryContext(ctx, 7)) }
	}},
}

// BenchmarkDriverLayer runs each statement on the in-memory driver through
// database/sql alone (plain), crl's driver layer (crl.OpenDB: crl, and
// crl-rules with the rules of every benchmark) and otelsql's wrapper
// (otelsql), one after the other: what a driver wrapper costs a statement
// on its success path is its row's difference to plain.
// BenchmarkDriverLayerParallel runs the same from every P at once.
func BenchmarkDriverLayer(b *testing.B) {
	ctx := context.Background()
	pools := layerPools(b)
	for _, st := range layerStatements {
		b.Run(st.name, func(b *testing.B) {
			for _, p := range pools {
				run := st.prepare(b, p.db)
				b.Run(p.name, func(b *testing.B) {
					b.ReportAllocs()
					clk := startCPUClock()
					for b.Loop() {
						if err := run(ctx); err != nil {
							b.Fatal(err)
						}
					}
					clk.report(b)
				})
			}
		})
	}
}

// BenchmarkDriverLayerParallel is BenchmarkDriverLayer run from every P at
// once (b.RunParallel): what the wrappers share between connections
// (crl's retry budget, otelsql's instruments) shows here.
func BenchmarkDriverLayerParallel(b *testing.B) {
	ctx := context.Background()
	pools := layerPools(b)
	for _, st := range layerStatements {
		b.Run(st.name, func(b *testing.B) {
			for _, p := range pools {
				run := st.prepare(b, p.db)
				b.Run(p.name, func(b *testing.B) {
					b.ReportAllocs()
					clk := startCPUClock()
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if err := run(ctx); err != nil {
								b.Error(err) // Fatal must not be called from RunParallel's goroutines
								return
							}
						}
					})
					clk.report(b)
				})
			}
		})
	}
}

// layerConnOp is one call that database/sql makes on a driver connection.
type layerConnOp struct {
	name string
	run  func(ctx context.Context, dc any) error
}

// layerArgs are the arguments of layerUpdate, as database/sql passes them.
var layerArgs = []driver.NamedValue{{Ordinal: 1, Value: int64(1)}, {Ordinal: 2, Value: int64(1)}}

// layerNV is the argument CheckNamedValue is given: a variable of its
// own, so that the call does not allocate it.
var layerNV driver.NamedValue

// layerConnOps are the calls database/sql makes on a driver connection
// for a statement (ExecerContext; QueryerContext, then the rows read to
// the end and closed; the NamedValueChecker for each argument) and for a
// return to the pool and its next use (Validator, SessionResetter).
var layerConnOps = []layerConnOp{
	{"Exec", func(ctx context.Context, dc any) error {
		_, err := dc.(driver.ExecerContext).ExecContext(ctx, layerUpdate, layerArgs)
		return err
	}},
	{"Query", func(ctx context.Context, dc any) error {
		rows, err := dc.(driver.QueryerContext).QueryContext(ctx, layerQuery, layerArgs[:1])
		if err != nil {
			return err
		}
		dest := make([]driver.Value, len(rows.Columns()))
		for {
			if err := rows.Next(dest); err == io.EOF {
				break
			} else if err != nil {
				rows.Close()
				return err
			}
		}
		return rows.Close()
	}},
	{"CheckNamedValue", func(_ context.Context, dc any) error {
		// database/sql's check of an argument: the connection's, then,
		// where it answers driver.ErrSkip, database/sql's default
		// conversion (the in-memory driver's answers that; crl's driver
		// layer converts a built-in type itself).
		layerNV = layerArgs[0]
		switch err := dc.(driver.NamedValueChecker).CheckNamedValue(&layerNV); err {
		case nil:
		case driver.ErrSkip:
			if layerNV.Value, err = driver.DefaultParameterConverter.ConvertValue(layerNV.Value); err != nil {
				return err
			}
		default:
			return fmt.Errorf("CheckNamedValue: %w, expected nil or driver.ErrSkip", err)
		}
		if layerNV.Value != layerArgs[0].Value {
			return fmt.Errorf("CheckNamedValue: %#v, expected %#v", layerNV.Value, layerArgs[0].Value)
		}
		return nil
	}},
	{"ResetSession", func(ctx context.Context, dc any) error {
		return dc.(driver.SessionResetter).ResetSession(ctx)
	}},
	{"IsValid", func(_ context.Context, dc any) error {
		if !dc.(driver.Validator).IsValid() {
			return errors.New("IsValid: false")
		}
		return nil
	}},
}

// BenchmarkDriverLayerConn makes the calls of layerConnOps on the driver
// connection under a pinned sql.Conn directly, as database/sql does
// inside DB.ExecContext and DB.QueryContext: the wrapper's own cost on
// its connection, without database/sql's, whose pool and locks make up
// most of BenchmarkDriverLayer's time and most of its noise.
func BenchmarkDriverLayerConn(b *testing.B) {
	ctx := context.Background()
	ops := layerConnOps
	pools := layerPools(b)
	for _, op := range ops {
		b.Run(op.name, func(b *testing.B) {
			for _, p := range pools {
				b.Run(p.name, func(b *testing.B) {
					conn, err := p.db.Conn(ctx)
					if err != nil {
						b.Fatal(err)
					}
					defer conn.Close()
					b.ReportAllocs()
					err = conn.Raw(func(dc any) error {
						clk := startCPUClock()
						for b.Loop() {
							if err := op.run(ctx, dc); err != nil {
								return err
							}
						}
						clk.report(b)
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
				})
			}
		})
	}
}

// BenchmarkDriverLayerTx runs a transaction — BEGIN, one Exec, one
// QueryRow read whole, COMMIT — on the in-memory driver through
// database/sql alone (plain), crl's driver layer (crl, with transaction
// replay on, its default: the Exec's and the query's text, arguments and
// the digest of what was read are recorded) and otelsql's wrapper, one
// after the other: what recording costs a transaction is crl's
// difference to plain (at most ×1.10 of plain, docs/benchmarks.md).
// crl-noreplay is crl with txReplay=off, for the share of the recording.
func BenchmarkDriverLayerTx(b *testing.B) {
	ctx := context.Background()
	pools := append(layerPools(b), layerPool{"crl-noreplay", func() *sql.DB {
		db, err := crl.OpenDB(memConnector{}, "crlmem", config.WithTxReplay(false))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		return db
	}()})
	for _, p := range pools {
		if p.name == "crl-rules" {
			continue
		}
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			clk := startCPUClock()
			for b.Loop() {
				if err := layerTx(ctx, p.db, false); err != nil {
					b.Fatal(err)
				}
			}
			clk.report(b)
		})
	}
}

// layerTx is BenchmarkDriverLayerTx's transaction; readCounts reads the
// exec's rows affected too, which the recording then digests.
func layerTx(ctx context.Context, db *sql.DB, readCounts bool) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, layerUpdate, 1, 1)
	if err == nil && readCounts {
		_, err = res.RowsAffected()
	}
	if err != nil {
		_ = tx.Rollback()
		return err
	}
	var (
		id   int64
		name string
	)
	if err := tx.QueryRowContext(ctx, layerQuery, 7).Scan(&id, &name); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
