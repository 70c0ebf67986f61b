package otel_test

import (
	"context"
	"fmt"
	"log"

	_ "github.com/microsoft/go-mssqldb"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/crl-go/crl/config"
	crlotel "github.com/crl-go/crl/hooks/otel"
	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

// A retried statement seen by OpenTelemetry: the deadlock's retry is an
// event on the caller's span, with the rule's token and the error number.
func Example() {
	srv, err := mssqltest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	const update = "UPDATE stock SET n = n - 1 WHERE id = 7"
	srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))

	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	obs, err := crlotel.New(crlotel.Options{TracerProvider: tp})
	if err != nil {
		log.Fatal(err)
	}
	defer obs.Close()
	db, err := sqlxcrl.Open("sqlserver", srv.DSN(),
		sqlxcrl.WithRetryExec("{1205:3,10ms+0}"), config.WithObserver(obs))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	ctx, span := tp.Tracer("shop").Start(context.Background(), "reserve")
	if _, err := db.ExecContext(ctx, update); err != nil {
		log.Fatal(err)
	}
	span.End()

	for _, s := range spans.Ended() {
		for _, e := range s.Events() {
			fmt.Print(s.Name(), ": ", e.Name)
			for _, a := range e.Attributes {
				switch a.Key {
				case "crl.retry.token", "db.response.status_code", "crl.attempts":
					fmt.Print(" ", a.Key, "=", a.Value.Emit())
				}
			}
			fmt.Println()
		}
	}
	// Output:
	// reserve: crl.retry crl.retry.token=1205 db.response.status_code=1205
	// reserve: crl.succeeded crl.attempts=2
}
