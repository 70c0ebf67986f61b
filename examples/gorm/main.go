// Command gorm shows gormcrl: GORM with the Configurable Retry Logic of the
// JDBC driver for SQL Server.
//
// Without flags it starts mssqltest, an in-process SQL Server stand-in,
// scripts deadlocks and shows a query retried on its own, a Create retried
// as a whole unit on a fresh transaction, and a transaction closure
// retried by gormcrl.Transaction:
//
//	go run ./examples/gorm
//
// With -dsn it runs the same operations against a real server (it creates
// the table crl_example_orders if needed):
//
//	go run ./examples/gorm -dsn 'sqlserver://user:pass@host?database=db'
package main

import (
	"flag"
	"fmt"
	"log"
	"os"

	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/gormcrl"
	"github.com/crl-go/crl/mssqltest"
)

// Order is the example's model.
type Order struct {
	ID   int64
	Name string
}

// TableName keeps the example away from a real "orders" table.
func (Order) TableName() string { return "crl_example_orders" }

// The statements GORM sends for Order, as the stand-in scripts them.
const (
	insertOrder = `INSERT INTO "crl_example_orders" ("name") OUTPUT INSERTED."id" VALUES (@p1);`
	selectFirst = `SELECT * FROM "crl_example_orders" WHERE "crl_example_orders"."id" = @p1 ORDER BY "crl_example_orders"."id" OFFSET 0 ROW FETCH NEXT 1 ROWS ONLY`
	renameOrder = `UPDATE "crl_example_orders" SET "name"=@p1 WHERE "id" = @p2`
)

// printer prints the retry events.
type printer struct{ core.NopObserver }

func (printer) RetryScheduled(e core.RetryScheduled) {
	if e.Kind == core.KindConnection {
		fmt.Printf("  connection retry %d after %v: %v\n", e.Attempt, e.Wait, e.Err)
		return
	}
	fmt.Printf("  retry: %s attempt %d failed (%s), next in %v\n", e.Kind, e.Attempt, e.Token, e.Wait)
}

func (printer) Succeeded(e core.Succeeded) {
	fmt.Printf("  done: %s succeeded after %d attempts\n", e.Kind, e.Attempts)
}

func main() {
	dsn := flag.String("dsn", "", "a sqlserver:// DSN of a real server; empty: an in-process stand-in")
	flag.Parse()
	if err := run(*dsn); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

func run(dsn string) error {
	var srv *mssqltest.Server
	if dsn == "" {
		var err error
		if srv, err = standIn(); err != nil {
			return err
		}
		defer srv.Close()
		dsn = srv.DSN()
	}

	fmt.Println("open (the login runs the connection loop):")
	db, err := gorm.Open(gormcrl.Open(sqlserver.Open(dsn),
		gormcrl.WithRetryExec("{1205,1222:3,100ms*2}"), config.WithObserver(printer{})),
		&gorm.Config{Logger: logger.Default.LogMode(logger.Warn)})
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	if sqlDB, err := db.DB(); err == nil {
		defer sqlDB.Close()
	}
	if srv == nil {
		if err := db.AutoMigrate(&Order{}); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	if err := tour(db, srv); err != nil {
		return err
	}
	if srv != nil {
		fmt.Printf("stand-in saw %d logins, %d committed and %d rolled-back transactions\n",
			srv.Logins(), srv.Commits(), srv.Rollbacks())
	}
	return nil
}

// standIn starts the in-process stand-in, scripted with a failed login
// and a deadlock victim for each statement of the tour.
func standIn() (*mssqltest.Server, error) {
	srv, err := mssqltest.Start()
	if err != nil {
		return nil, err
	}
	srv.FailLogin(40613, 1) // a failover while we log in
	srv.Handle(selectFirst, mssqltest.Error(1205), mssqltest.Rows([]string{"id", "name"}, []any{int64(8), "pen"}))
	srv.Handle(insertOrder, mssqltest.Error(1205), mssqltest.Rows([]string{"id"}, []any{int64(8)}))
	srv.Handle(renameOrder, mssqltest.Error(1205), mssqltest.Affected(1))
	fmt.Println("mssqltest listening; scripted: a failed login, a deadlocked INSERT, SELECT and UPDATE")
	return srv, nil
}

// tour runs GORM's operations one by one: an implicit transaction, a
// query, a closure retried whole, and a query that opted out (srv, the
// stand-in, nil on a real server, is scripted again for it).
func tour(db *gorm.DB, srv *mssqltest.Server) error {
	fmt.Println("Create (GORM's implicit transaction, retried as a whole):")
	order := Order{Name: "pen"}
	if err := db.Create(&order).Error; err != nil {
		return fmt.Errorf("create: %w", err)
	}
	fmt.Printf("  created order %d\n", order.ID)

	fmt.Println("First (a query, retried on its own):")
	var found Order
	if err := db.First(&found, order.ID).Error; err != nil {
		return fmt.Errorf("first: %w", err)
	}
	fmt.Printf("  found %+v\n", found)

	fmt.Println("gormcrl.Transaction (the closure retried on a fresh transaction):")
	runs := 0
	err := gormcrl.Transaction(db, func(tx *gorm.DB) error {
		runs++ //crlvet:ignore counts the runs of the closure, to print them
		return tx.Model(&Order{ID: order.ID}).Update("name", "fountain pen").Error
	})
	if err != nil {
		return fmt.Errorf("transaction: %w", err)
	}
	fmt.Printf("  closure ran %d times\n", runs)

	fmt.Println("NoRetry (the query opted out, so a deadlock is returned at once):")
	if srv != nil {
		srv.Handle(selectFirst, mssqltest.Error(1205), mssqltest.Rows([]string{"id", "name"}, []any{int64(8), "pen"}))
	}
	var again Order
	err = db.Clauses(gormcrl.NoRetry).First(&again, order.ID).Error
	fmt.Printf("  error: %v\n", err)
	return nil
}
