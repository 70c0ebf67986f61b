package crl_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"

	mssql "github.com/microsoft/go-mssqldb"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/mssqltest"
)

// Plain database/sql over a connector of your own (docs/databasesql.md;
// crl.OpenDB is the same in one call): WrapConnector gives every new
// pooled connection the connection loop, and its connections run every
// statement outside a transaction under the statement loop of the same
// Runtime, so the handle has one budget and one breaker for both.
func ExampleWrapConnector() {
	srv, err := mssqltest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	const update = "UPDATE stock SET n = n - 1 WHERE id = 7"
	srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
	srv.FailLogin(40613, 1) // Azure SQL's "database not currently available"

	c, err := mssql.NewConnector(srv.DSN()) // or NewConnectorWithAccessTokenProvider, …
	if err != nil {
		log.Fatal(err)
	}
	wrapped, _, err := crl.WrapConnector(c, "sqlserver", config.WithRetryExec("{1205:3,10ms*2}"))
	if err != nil {
		log.Fatal(err)
	}
	db := sql.OpenDB(wrapped)
	defer db.Close()

	ctx := context.Background()
	res, err := db.ExecContext(ctx, update) // retried inside the driver layer
	if err != nil {
		log.Fatal(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("logins:", srv.Logins(), "executions:", srv.Count(update), "rows:", n)
	// Output:
	// logins: 2 executions: 2 rows: 1
}
