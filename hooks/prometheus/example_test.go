package prometheus_test

import (
	"fmt"
	"log"

	_ "github.com/microsoft/go-mssqldb"
	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/crl-go/crl/config"
	crlprom "github.com/crl-go/crl/hooks/prometheus"
	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

// A handle that exports the post-mortem's two counters: one deadlock
// retried, so the database saw two executions for one request. The
// alert of hooks/prometheus/alerts.yml divides the first by the second.
func Example() {
	srv, err := mssqltest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	const update = "UPDATE stock SET n = n - 1 WHERE id = 7"
	srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))

	reg := prom.NewRegistry()
	metrics, err := crlprom.New(reg, crlprom.Options{})
	if err != nil {
		log.Fatal(err)
	}
	db, err := sqlxcrl.Open("sqlserver", srv.DSN(),
		sqlxcrl.WithRetryExec("{1205:3,10ms+0}"), config.WithObserver(metrics))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(update); err != nil {
		log.Fatal(err)
	}

	families, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range families {
		switch f.GetName() {
		case "database_retry_requests_total", "database_total_requests_total":
			for _, m := range f.GetMetric() {
				if m.GetLabel()[0].GetValue() == "statement" {
					fmt.Printf("%s{kind=\"statement\"} %g\n", f.GetName(), m.GetCounter().GetValue())
				}
			}
		}
	}
	// Output:
	// database_retry_requests_total{kind="statement"} 1
	// database_total_requests_total{kind="statement"} 1
}
