package crl_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	mssql "github.com/microsoft/go-mssqldb"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/mssqltest"
)

// A report that must fail fast: under WithoutRetry the deadlock comes
// back at once, as the driver's own error, where the pool's rule would
// have retried it.
func ExampleWithoutRetry() {
	srv, err := mssqltest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	const report = "SELECT SUM(total) FROM orders"
	srv.Handle(report, mssqltest.Error(1205), mssqltest.Rows([]string{"sum"}, []any{int64(420)}))

	db, err := crl.Open("sqlserver", srv.DSN(), crl.WithRetryExec("{1205:3,10ms}"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	var sum int64
	err = db.QueryRowContext(crl.WithoutRetry(context.Background()), report).Scan(&sum)
	var me mssql.Error
	fmt.Println("fail fast:", errors.As(err, &me) && me.Number == 1205, "after", srv.Count(report), "execution")
	// Output:
	// fail fast: true after 1 execution
}

// A unit of work that logs which run it is: the first run is a deadlock
// victim, crl runs the unit again.
func ExampleAttempt() {
	srv, err := mssqltest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	const debit = "UPDATE accounts SET balance = balance - 10 WHERE id = 1"
	srv.Handle(debit, mssqltest.Error(1205), mssqltest.Affected(1))

	db, err := crl.Open("sqlserver", srv.DSN(), crl.WithRetryExec("{1205:3,10ms}"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	ctx := context.Background()
	fmt.Println("outside:", crl.Attempt(ctx))
	err = crl.Retry(ctx, func(ctx context.Context) error {
		fmt.Println("transfer, attempt", crl.Attempt(ctx))
		_, err := db.ExecContext(ctx, debit)
		return err
	})
	fmt.Println("done:", err)
	// Output:
	// outside: 0
	// transfer, attempt 1
	// transfer, attempt 2
	// done: <nil>
}
