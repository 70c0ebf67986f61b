// Command properties shows the hot reload of an mssql-jdbc.properties file,
// without a database: a statement that always fails as a deadlock victim
// (error 1205) is run while the file is edited, broken and deleted.
//
//	go run ./examples/properties
package main

import (
	"context"
	"fmt"
	"log"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

// deadlock is a server error as go-mssqldb reports it: core finds its
// number through SQLErrorNumber.
type deadlock struct{}

func (deadlock) Error() string         { return "mssql: Transaction was deadlocked" }
func (deadlock) SQLErrorNumber() int32 { return 1205 }

// reloads prints the reload events.
type reloads struct{ core.NopObserver }

func (reloads) RulesReloaded(e core.RulesReloaded) {
	if e.Err != nil {
		fmt.Printf("  reload failed (line %d): %v\n", e.Line, e.Err)
		return
	}
	fmt.Println("  reloaded", filepath.Base(e.Path))
}

func main() {
	dir, err := os.MkdirTemp("", "crl-properties")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "mssql-jdbc.properties")
	mtime := time.Now()
	write := func(content string) {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			log.Fatal(err)
		}
		// As if saved a second later, for file systems with coarse times.
		mtime = mtime.Add(time.Second)
		_ = os.Chtimes(path, mtime, mtime)
	}
	write("retryExec={1205:1,10ms}\n")

	rt, driverDSN, err := config.New("sqlserver",
		"sqlserver://app@localhost?database=shop&retryRefresh=100ms&retryProperties="+url.PathEscape(path),
		config.WithObserver(reloads{}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("driver DSN:", driverDSN)

	run := func(step string) {
		time.Sleep(150 * time.Millisecond) // let retryRefresh pass
		attempts := 0
		err := rt.Retrier().Do(context.Background(), "update stock set n = n - 1", func(context.Context) error {
			attempts++
			return deadlock{}
		})
		fmt.Printf("%s: %d attempts (%v)\n", step, attempts, err)
	}
	run("start, retryExec={1205:1,10ms}")
	write("retryExec={1205:3,10ms}\n")
	run("edited to {1205:3,10ms}")
	write("retryExec={1205:3,10ms}\nretryExec={1205:two}\n")
	run("broken on line 2")
	if err := os.Remove(path); err != nil {
		log.Fatal(err)
	}
	run("deleted")
}
