package benchmarks

import (
	"context"
	"database/sql"
	"testing"

	"github.com/XSAM/otelsql"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/crl-go/crl"
)

// layerPool is a pool over the in-memory driver's connector, opened by
// one of the driver wrappers compared (or by database/sql alone).
type layerPool struct {
	name string
	db   *sql.DB
}

// layerPools opens, over the same in-memory connector: database/sql
// alone (plain), crl's driver layer with its default settings (crl) and
// with rules (crl-rules), and otelsql's wrapper with no-op tracer and
// meter providers (otelsql), the peer.
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
	}
}

// layerStatement is one statement run through a pool.
type layerStatement struct {
	name string
	// prepare returns the function that runs the statement once on db.
	prepare func(tb testing.TB, db *sql.DB) func(ctx context.Context) error
}

const (
	layerUpdate = "UPDATE accounts SET balance = balance + 1 WHERE id = 1"
	layerQuery  = "SELECT id, name FROM orders WHERE id = 7"
)

// layerStatements are the statements compared: ExecContext, QueryContext
// with every row read, QueryRowContext with its row scanned, and a
// prepared statement's ExecContext.
var layerStatements = []layerStatement{
	{"Exec", func(_ testing.TB, db *sql.DB) func(context.Context) error {
		return func(ctx context.Context) error { _, err := db.ExecContext(ctx, layerUpdate); return err }
	}},
	{"Query", func(_ testing.TB, db *sql.DB) func(context.Context) error {
		return func(ctx context.Context) error { return readAll(db.QueryContext(ctx, layerQuery)) }
	}},
	{"QueryRow", func(_ testing.TB, db *sql.DB) func(context.Context) error {
		return func(ctx context.Context) error {
			var (
				id   int64
				name string
			)
			return db.QueryRowContext(ctx, layerQuery).Scan(&id, &name)
		}
	}},
	{"StmtExec", func(tb testing.TB, db *sql.DB) func(context.Context) error {
		stmt, err := db.PrepareContext(context.Background(), layerUpdate)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { stmt.Close() })
		return func(ctx context.Context) error { _, err := stmt.ExecContext(ctx); return err }
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
