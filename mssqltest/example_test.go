package mssqltest_test

import (
	"database/sql"
	"errors"
	"fmt"

	mssql "github.com/microsoft/go-mssqldb"

	"github.com/crl-go/crl/mssqltest"
)

// The server answers the first execution of the UPDATE as a deadlock
// victim and the second with success; the driver reports each as the real
// SQL Server would.
func ExampleServer() {
	srv, err := mssqltest.Start()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	const update = "UPDATE accounts SET balance = balance - @p1 WHERE id = @p2"
	srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))

	db, err := sql.Open("sqlserver", srv.DSN())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()

	_, err = db.Exec(update, 10, 1)
	var sqlErr mssql.Error
	if errors.As(err, &sqlErr) {
		fmt.Printf("first attempt: error %d, class %d, state %d\n", sqlErr.Number, sqlErr.Class, sqlErr.State)
	}

	res, err := db.Exec(update, 10, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	n, _ := res.RowsAffected()
	fmt.Printf("second attempt: %d row affected\n", n)
	fmt.Printf("executions received: %d\n", srv.Count(update))
	// Output:
	// first attempt: error 1205, class 13, state 51
	// second attempt: 1 row affected
	// executions received: 2
}

// Rows scripts a result set; each column's SQL type follows its Go values.
func ExampleRows() {
	srv, err := mssqltest.Start()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	srv.Handle("SELECT id, name, nickname FROM users",
		mssqltest.Rows([]string{"id", "name", "nickname"},
			[]any{int64(1), "Ada", nil},
			[]any{int64(2), "Grace", "Amazing Grace"},
		))

	db, err := sql.Open("sqlserver", srv.DSN())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()

	rows, err := db.Query("SELECT id, name, nickname FROM users")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id       int64
			name     string
			nickname sql.NullString
		)
		if err := rows.Scan(&id, &name, &nickname); err != nil {
			fmt.Println(err)
			return
		}
		if !nickname.Valid {
			nickname.String = "NULL"
		}
		fmt.Printf("%d %s %s\n", id, name, nickname.String)
	}
	// Output:
	// 1 Ada NULL
	// 2 Grace Amazing Grace
}
