// Command sqlx shows sqlxcrl: the connection loop, a whole-transaction
// retry with RunInTx, and a statement retry (a SELECT run through code that
// takes sqlx.ExtContext, the pattern that keeps retries when code is shared
// between a *sqlxcrl.DB and a *sqlxcrl.Tx). Without -dsn it runs against
// mssqltest, the in-process SQL Server stand-in, with scripted failures;
// with -dsn it runs the same code against a real server (it then creates
// and drops a table named crl_example_accounts).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/jmoiron/sqlx"
	mssql "github.com/microsoft/go-mssqldb"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

const (
	createTable = "CREATE TABLE crl_example_accounts (id INT PRIMARY KEY, balance BIGINT NOT NULL)"
	insert      = "INSERT INTO crl_example_accounts (id, balance) VALUES (1, 100), (2, 0)"
	debit       = "UPDATE crl_example_accounts SET balance = balance - @p1 WHERE id = 1"
	credit      = "UPDATE crl_example_accounts SET balance = balance + @p1 WHERE id = 2"
	selectAll   = "SELECT id, balance FROM crl_example_accounts ORDER BY id"
	dropTable   = "DROP TABLE crl_example_accounts"
	rules       = "{1205,1222:3,100ms*2:select,update,insert}"
)

type account struct {
	ID      int64 `db:"id"`
	Balance int64 `db:"balance"`
}

type printer struct{ core.NopObserver }

func (printer) RetryScheduled(e core.RetryScheduled) {
	if e.Kind == core.KindConnection {
		fmt.Printf("  [connection] attempt %d failed, retry in %v: %v\n", e.Attempt, e.Wait, e.Err)
		return
	}
	fmt.Printf("  [%s] attempt %d failed (%s), retry in %v\n", e.Kind, e.Attempt, e.Token, e.Wait)
}

func main() {
	dsn := flag.String("dsn", "", "a sqlserver:// DSN of a real server (default: the in-process stand-in)")
	flag.Parse()
	if err := run(*dsn); err != nil {
		fmt.Fprintln(os.Stderr, "sqlx example:", err)
		os.Exit(1)
	}
}

func run(dsn string) error {
	if dsn == "" {
		srv, err := mssqltest.Start()
		if err != nil {
			return err
		}
		defer srv.Close()
		script(srv)
		dsn = srv.DSN()
		fmt.Println("using the in-process SQL Server stand-in (mssqltest)")
	}
	return runOn(dsn)
}

// runOn runs the example against the server of dsn.
func runOn(dsn string) error {
	ctx := context.Background()
	db, err := sqlxcrl.ConnectContext(ctx, "sqlserver", dsn, sqlxcrl.WithRetryExec(rules), config.WithObserver(printer{}))
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer db.Close()

	db.MustExecContext(ctx, createTable)
	defer db.MustExecContext(ctx, dropTable)
	db.MustExecContext(ctx, insert)

	fmt.Println("transfer 10 in one transaction, retried as a whole on a deadlock:")
	runs := 0
	err = db.RunInTx(ctx, nil, func(tx *sqlxcrl.Tx) error {
		runs++ //crlvet:ignore counts the runs of the closure, to print them
		if _, err := tx.ExecContext(ctx, debit, 10); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, credit, 10)
		return err
	})
	var me mssql.Error
	if errors.As(err, &me) {
		return fmt.Errorf("transfer failed with SQL Server error %d: %w", me.Number, err)
	}
	if err != nil {
		return err
	}
	fmt.Printf("  committed after %d run(s) of the closure\n", runs)

	fmt.Println("read the balances; a deadlock on the SELECT is retried on its own:")
	accounts, err := balances(ctx, db)
	if err != nil {
		return err
	}
	for _, a := range accounts {
		fmt.Printf("  account %d: %d\n", a.ID, a.Balance)
	}
	return nil
}

// balances reads the accounts. It takes sqlx.ExtContext, not *sqlx.DB:
// given the *sqlxcrl.DB the statement runs under the statement loop, given
// a *sqlxcrl.Tx it runs in the transaction. (Passing db.DB, the embedded
// *sqlx.DB, would compile and lose the retries.)
func balances(ctx context.Context, q sqlx.ExtContext) ([]account, error) {
	var accounts []account
	err := sqlx.SelectContext(ctx, q, &accounts, selectAll)
	return accounts, err
}

// script makes the stand-in behave like a busy server: the first login
// finds the database failing over, the first transfer is a deadlock victim,
// and so is the first SELECT of the balances.
func script(srv *mssqltest.Server) {
	srv.FailLogin(40613, 1)
	srv.Handle(credit, mssqltest.Error(1205), mssqltest.Affected(1))
	srv.Handle(debit, mssqltest.Affected(1))
	srv.Handle(selectAll, mssqltest.Error(1205), mssqltest.Rows([]string{"id", "balance"}, []any{int64(1), int64(90)}, []any{int64(2), int64(10)}))
}
