package config_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/crl-go/crl/config"
)

func ExampleParseDSN() {
	c, driverDSN, err := config.ParseDSN("sqlserver",
		"server=db.example;user id=app;retryExec={1205,1222:3,2*2;40613:2,5};connectRetryCount=0;database=shop")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(driverDSN)
	fmt.Println(c.RetryExec)
	fmt.Println(c.ConnectRetryCount) // core.Disabled: 0 turns connection retries off, as in JDBC

	_, _, err = config.ParseDSN("sqlserver", "sqlserver://db.example?connectRetryCount=300")
	fmt.Println(err)
	// Output:
	// server=db.example;user id=app;database=shop
	// 1205,1222:3,2*2;40613:2,5
	// -1
	// config: DSN: connectRetryCount="300": expected a whole number from 0 (off) to 255
}

func ExampleNew() {
	dir, _ := os.MkdirTemp("", "crl")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "mssql-jdbc.properties")
	_ = os.WriteFile(path, []byte("# edited by operations\nretryExec={1205:3,1*2}\nloginTimeout=60\n"), 0o644)

	// Code > DSN > file > defaults: the DSN's connectRetryCount and the
	// file's rules and loginTimeout all apply.
	rt, driverDSN, err := config.NewRuntime("mysql",
		"app@tcp(db.example:3306)/shop?parseTime=true&connectRetryCount=2&retryProperties="+path)
	if err != nil {
		fmt.Println(err)
		return
	}
	p := rt.Retrier().Policy()
	rule, _ := p.Statement.Lookup(1205)
	fmt.Println(driverDSN)
	fmt.Println(rule.WaitTimes(), p.ConnectRetryCount, p.LoginTimeout)

	// A line that does not parse is named.
	_ = os.WriteFile(path, []byte("retryExec={1205:3,1*2}\nretryExec={1222:three}\n"), 0o644)
	err = rt.Reload()
	var fe *config.FileError
	fmt.Println(errors.As(err, &fe), fe.Line)
	rule, _ = rt.Retrier().Policy().Statement.Lookup(1205)
	fmt.Println(rule.WaitTimes()) // the last good rules stay
	// Output:
	// app@tcp(db.example:3306)/shop?parseTime=true
	// [1s 2s 4s] 2 1m0s
	// true 2
	// [1s 2s 4s]
}
