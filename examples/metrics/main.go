// Command example wires both metrics hooks to a real MariaDB handle and
// serves their metrics on loopback: crl's Prometheus hook
// (hooks/prometheus: the post-mortem's names, the crl_ series that
// alerts.yml and dashboard.json use) and its OpenTelemetry hook
// (hooks/otel: db.client.operation.duration and the retry counters,
// exported here through the OpenTelemetry Prometheus exporter under the
// otel_ prefix so that both sets share one /metrics).
//
//	CRL_MYSQL_DSN='root@tcp(127.0.0.1:3306)/test?parseTime=true' go run . -addr 127.0.0.1:9464
//	curl -s 127.0.0.1:9464/metrics | grep -E '^(database_|crl_|otel_db_)'
//
// It creates a table obs_example_<pid>, runs a few statements and a
// transaction through sqlxcrl, and serves until interrupted; the table is
// dropped on the way out. This module is its own (examples/metrics), so that
// neither hook module requires the other.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	_ "github.com/go-sql-driver/mysql"
	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/hooks"
	crlotel "github.com/crl-go/crl/hooks/otel"
	crlprom "github.com/crl-go/crl/hooks/prometheus"
	"github.com/crl-go/crl/sqlxcrl"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9464", "where to serve /metrics (keep it on loopback)")
	flag.Parse()
	dsn := os.Getenv("CRL_MYSQL_DSN")
	if dsn == "" {
		log.Fatal("example: set CRL_MYSQL_DSN, e.g. root@tcp(127.0.0.1:3306)/test?parseTime=true")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, dsn, *addr, func(url string) { fmt.Println("serving", url) })
	if err != nil {
		log.Fatal(err)
	}
}

// run opens the handle with both hooks, runs the workload, and serves the
// metrics on addr until ctx ends; ready is called with the metrics' URL.
func run(ctx context.Context, dsn, addr string, ready func(url string)) error {
	reg := prom.NewRegistry()
	metrics, err := crlprom.New(reg, crlprom.Options{ConstLabels: prom.Labels{"db": "test"}})
	if err != nil {
		return err
	}
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithNamespace("otel"))
	if err != nil {
		return fmt.Errorf("example: the OpenTelemetry Prometheus exporter: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer mp.Shutdown(context.Background())
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	// The hook reads db.namespace and server.address/port from the DSN;
	// the mysql driver serves MySQL and MariaDB alike, so DBSystem says
	// which one this is.
	traces, err := crlotel.New(crlotel.Options{Driver: "mysql", DSN: dsn, DBSystem: "mariadb",
		TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		return err
	}
	defer traces.Close()

	db, err := sqlxcrl.ConnectContext(ctx, "mysql", dsn,
		config.WithRetryExec("{1213,1205:3,100ms*2}"), config.WithObserver(hooks.Multi(metrics, traces)))
	if err != nil {
		return err
	}
	defer db.Close()
	// The budget and the breaker exist once the handle does: watch them
	// now, so that both hooks read their level and state at collection.
	budget, breaker := db.Runtime().Retrier().Budget(), db.Runtime().Breaker()
	metrics.WatchBudget(budget)
	metrics.WatchBreaker(breaker)
	traces.WatchBudget(budget)
	traces.WatchBreaker(breaker)
	if err := workload(ctx, db); err != nil {
		return err
	}

	return serve(ctx, reg, addr, ready)
}

// serve serves reg's metrics on addr until ctx ends; ready is called
// with the metrics' URL.
func serve(ctx context.Context, reg *prom.Registry, addr string, ready func(url string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("example: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	shutdownErr := make(chan error, 1)
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		shutdownErr <- srv.Shutdown(shutdown)
	}()
	ready("http://" + ln.Addr().String() + "/metrics")
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("example: serve: %w", err)
	}
	if err := <-shutdownErr; err != nil {
		return fmt.Errorf("example: shutdown: %w", err)
	}
	return nil
}

// workload runs a few statements and a transaction on a table of its own,
// which it drops at the end.
func workload(ctx context.Context, db *sqlxcrl.DB) error {
	table := fmt.Sprintf("obs_example_%d", os.Getpid())
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+table+" (id INT PRIMARY KEY, balance INT NOT NULL)"); err != nil {
		return fmt.Errorf("example: create %s: %w", table, err)
	}
	defer db.ExecContext(context.Background(), "DROP TABLE IF EXISTS "+table)
	if _, err := db.ExecContext(ctx, "INSERT INTO "+table+" (id, balance) VALUES (1, 100)"); err != nil {
		return fmt.Errorf("example: insert: %w", err)
	}
	for range 3 {
		var balance int
		if err := db.GetContext(ctx, &balance, "SELECT balance FROM "+table+" WHERE id = 1"); err != nil {
			return fmt.Errorf("example: select: %w", err)
		}
	}
	return db.RunInTx(ctx, nil, func(tx *sqlxcrl.Tx) error {
		_, err := tx.ExecContext(ctx, "UPDATE "+table+" SET balance = balance - 10 WHERE id = 1")
		return err
	})
}
