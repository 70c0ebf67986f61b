package gormcrl_test

import (
	"fmt"

	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/crl-go/crl/gormcrl"
	"github.com/crl-go/crl/mssqltest"
)

// Open a GORM DB with retries, and watch a Create that was chosen as a
// deadlock victim be re-run as a whole, on a fresh transaction.
func ExampleOpen() {
	srv, err := mssqltest.Start()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	srv.Handle(`INSERT INTO "orders" ("name") OUTPUT INSERTED."id" VALUES (@p1);`,
		mssqltest.Error(1205), mssqltest.Rows([]string{"id"}, []any{int64(8)}))

	db, err := gorm.Open(gormcrl.Open(sqlserver.Open(srv.DSN()+"&retryExec={1205:3,1ms}")),
		&gorm.Config{Logger: logger.Discard})
	if err != nil {
		panic(err)
	}
	order := Order{Name: "pen"}
	if err := db.Create(&order).Error; err != nil {
		panic(err)
	}
	fmt.Println("order", order.ID)
	fmt.Println("committed", len(srv.Committed()), "rolled back", len(srv.RolledBack()))
	// Output:
	// order 8
	// committed 1 rolled back 1
}

// Retry a whole transaction: the closure runs again on a fresh
// transaction when a statement in it is a deadlock victim.
func ExampleTransaction() {
	srv, err := mssqltest.Start()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	srv.Handle("UPDATE accounts SET balance = balance - 10 WHERE id = 1", mssqltest.Error(1205), mssqltest.Affected(1))

	db, err := gorm.Open(gormcrl.Open(sqlserver.Open(srv.DSN()), gormcrl.WithRetryExec("{1205:3,1ms}")),
		&gorm.Config{Logger: logger.Discard})
	if err != nil {
		panic(err)
	}
	runs := 0
	err = gormcrl.Transaction(db, func(tx *gorm.DB) error {
		runs++
		if err := tx.Exec("UPDATE accounts SET balance = balance - 10 WHERE id = 1").Error; err != nil {
			return err
		}
		return tx.Exec("UPDATE accounts SET balance = balance + 10 WHERE id = 2").Error
	})
	// The deadlock victim's transaction was replayed by the driver layer
	// (its first UPDATE re-sent, the failed one run again): the closure
	// ran once. It runs again only when a replay diverges.
	fmt.Println(err, runs)
	// Output:
	// <nil> 1
}

// Opt one query out of every retry.
func ExampleNoRetry() {
	srv, err := mssqltest.Start()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	db, err := gorm.Open(gormcrl.Open(sqlserver.Open(srv.DSN()), gormcrl.WithRetryExec("{1205:3,1ms}")),
		&gorm.Config{Logger: logger.Discard})
	if err != nil {
		panic(err)
	}
	srv.Handle(`SELECT count(*) FROM "orders"`, mssqltest.Error(1205), mssqltest.Rows([]string{"n"}, []any{int64(3)}))
	var n int64
	err = db.Clauses(gormcrl.NoRetry).Model(&Order{}).Count(&n).Error
	fmt.Println(err != nil, srv.Count(`SELECT count(*) FROM "orders"`))
	// Output:
	// true 1
}

// Register the plugin on a DB opened without Open, and keep the *Plugin to
// read its settings after db.Use.
func ExampleNew() {
	srv, err := mssqltest.Start()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	db, err := gorm.Open(sqlserver.Open(srv.DSN()), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		panic(err)
	}
	p := gormcrl.New(gormcrl.WithRetryExec("{1205:3,100ms*2}"))
	fmt.Println("before Use:", p.Retrier() == nil)
	if err := db.Use(p); err != nil {
		panic(err)
	}
	rule, _ := p.Retrier().Policy().Statement.Lookup(1205)
	fmt.Println("after Use:", rule.WaitTimes())
	// Output:
	// before Use: true
	// after Use: [100ms 200ms 400ms]
}
