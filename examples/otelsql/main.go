// Command otelsql runs crl under a driver that github.com/XSAM/otelsql
// wraps for tracing, as a traced service has it: otelsql registers the
// wrapped go-mssqldb under a name of its own (sqlserver-otelsql-0), and
// config.WithDriverFamily tells crl that the name is a SQL Server driver,
// so crl reads and strips its DSN keys as SQL Server's, binds @p1 and runs
// its rules; crl's OpenTelemetry hook (hooks/otel) records the retries.
// Against the built-in SQL Server stand-in (mssqltest), a deadlock is
// retried and the trace shows the driver's span of each attempt under the
// caller's span, which carries crl's retry events:
//
//	go run ./examples/otelsql
//
// The driver's spans nest under the caller's span, the one that carries
// crl's events. An operation without a span of the caller's gets a span of
// crl's own at its first retry ("crl.retry statement"), but the driver's
// spans of its attempts are not its children: crl does not pass that span
// down in the attempts' context. Start a span around the work, as here.
//
// This is a module of its own, so that crl requires neither otelsql nor
// OpenTelemetry.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
	"strings"

	"github.com/XSAM/otelsql"
	_ "github.com/microsoft/go-mssqldb" // registers sqlserver, which otelsql wraps
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/crl-go/crl/config"
	crlotel "github.com/crl-go/crl/hooks/otel"
	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

// reserve is the statement the example retries.
const reserve = "UPDATE stock SET n = n - 1 WHERE id = 7"

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run starts the stand-in, runs the deadlocked statement through crl over
// the traced driver and prints the spans as a tree.
func run(w io.Writer) error {
	srv, err := mssqltest.Start()
	if err != nil {
		return fmt.Errorf("otelsql example: %w", err)
	}
	defer srv.Close()
	srv.Handle(reserve, mssqltest.Error(1205), mssqltest.Affected(1))

	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	db, obs, err := openTraced(tp, srv.DSN()+"&retryExec={1205:3,10ms*2}")
	if err != nil {
		return err
	}
	defer obs.Close()
	defer db.Close()

	ctx, span := tp.Tracer("shop").Start(context.Background(), "reserve")
	_, err = db.ExecContext(ctx, reserve)
	span.End()
	if err != nil {
		return fmt.Errorf("otelsql example: %w", err)
	}
	printTree(w, spans.Ended())
	return nil
}

// openTraced opens a crl handle over go-mssqldb wrapped by otelsql, with
// crl's OpenTelemetry hook, both on tp.
func openTraced(tp trace.TracerProvider, dsn string) (*sqlxcrl.DB, *crlotel.Observer, error) {
	// otelsql's Register adds a driver to database/sql's process-wide
	// registry under a new name at each call; a service does it once.
	name, err := otelsql.Register("sqlserver", otelsql.WithTracerProvider(tp))
	if err != nil {
		return nil, nil, fmt.Errorf("otelsql example: register: %w", err)
	}
	obs, err := crlotel.New(crlotel.Options{TracerProvider: tp, Driver: "sqlserver", DSN: dsn})
	if err != nil {
		return nil, nil, fmt.Errorf("otelsql example: %w", err)
	}
	db, err := sqlxcrl.Open(name, dsn, config.WithDriverFamily("sqlserver"), config.WithObserver(obs))
	if err != nil {
		return nil, nil, fmt.Errorf("otelsql example: %w", err)
	}
	return db, obs, nil
}

// printTree prints the spans, children under their parent, with crl's
// events and the driver's errors.
func printTree(w io.Writer, spans []sdktrace.ReadOnlySpan) {
	children := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	ids := map[trace.SpanID]bool{}
	for _, s := range spans {
		ids[s.SpanContext().SpanID()] = true
	}
	var roots []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if p := s.Parent().SpanID(); p.IsValid() && ids[p] {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	byStart := func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) }
	var walk func(s sdktrace.ReadOnlySpan, depth int)
	walk = func(s sdktrace.ReadOnlySpan, depth int) {
		line := strings.Repeat("  ", depth) + s.Name()
		if s.Status().Code == codes.Error {
			line += " (error: " + exception(s) + ")"
		}
		fmt.Fprintln(w, line)
		for _, e := range s.Events() {
			if strings.HasPrefix(e.Name, "crl.") {
				fmt.Fprintln(w, strings.Repeat("  ", depth+1)+"event "+e.Name)
			}
		}
		kids := children[s.SpanContext().SpanID()]
		slices.SortFunc(kids, byStart)
		for _, c := range kids {
			walk(c, depth+1)
		}
	}
	slices.SortFunc(roots, byStart)
	for _, r := range roots {
		walk(r, 0)
	}
}

// exception returns the message of the span's first exception event (the
// error otelsql records), or its status description.
func exception(s sdktrace.ReadOnlySpan) string {
	for _, e := range s.Events() {
		for _, a := range e.Attributes {
			if a.Key == "exception.message" {
				return a.Value.AsString()
			}
		}
	}
	return s.Status().Description
}
