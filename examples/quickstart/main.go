// Command quickstart shows crl retrying a SQL Server deadlock, with no
// server to install: it starts mssqltest, the SQL Server stand-in, in the
// same process, scripts two deadlocks, and runs the statement through
// sqlxcrl with the retryExec rule {1205,1222:3,100ms*2:select,update}: a
// deadlock (1205) or a lock timeout (1222) on a SELECT or an UPDATE is
// retried up to 3 times, after 100ms, 200ms and 400ms.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	_ "github.com/microsoft/go-mssqldb" // registers the "sqlserver" driver

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

// rule is the retryExec rule the quickstart runs with (the package doc
// names it).
const rule = "{1205,1222:3,100ms*2:select,update}"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// printer prints the retry events.
type printer struct{ core.NopObserver }

func (printer) RetryScheduled(e core.RetryScheduled) {
	fmt.Printf("  attempt %d failed with %s; retrying in %v\n", e.Attempt, e.Token, e.Wait)
}

func (printer) Succeeded(e core.Succeeded) {
	fmt.Printf("  succeeded on attempt %d\n", e.Attempts)
}

func run() error {
	srv, err := mssqltest.Start()
	if err != nil {
		return err
	}
	defer srv.Close()

	const update = "UPDATE accounts SET balance = balance - 10 WHERE id = 1"
	srv.Handle(update, mssqltest.Error(1205), mssqltest.Error(1205), mssqltest.Affected(1))

	dsn := srv.DSN() + "&retryExec=" + rule
	db, err := sqlxcrl.Connect("sqlserver", dsn, config.WithObserver(printer{}))
	if err != nil {
		return err
	}
	defer db.Close()

	fmt.Println("rule " + rule + ": up to 3 retries after 100ms, 200ms, 400ms")
	fmt.Println(update)
	start := time.Now()
	res, err := db.ExecContext(context.Background(), update)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	fmt.Printf("%d row updated after %d executions in %v\n", n, srv.Count(update), time.Since(start).Round(10*time.Millisecond))
	return nil
}
