// Command properties shows the hot reload of an mssql-jdbc.properties file,
// without a database: a statement that always fails as a deadlock victim
// (error 1205) is run while the file is edited, broken and deleted.
//
//	go run ./examples/properties
package main

import (
	"context"
	"fmt"
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
		fmt.Printf("  reload failed: %v\n", e.Err) // the error names the line, when there is one
		return
	}
	fmt.Println("  reloaded", filepath.Base(e.Path))
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "properties example:", err)
		os.Exit(1)
	}
}

func run() error {
	dir, err := os.MkdirTemp("", "crl-properties")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "mssql-jdbc.properties")
	mtime := time.Now()
	var writeErr error
	write := func(content string) {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil && writeErr == nil {
			writeErr = err
		}
		// As if saved a second later, for file systems with coarse times.
		mtime = mtime.Add(time.Second)
		_ = os.Chtimes(path, mtime, mtime)
	}
	write("retryExec={1205:1,10ms+0}\n")

	// Every statement of this demo fails, which the retry budget would
	// rightly treat as a storm: it is off so that each edit's retries show.
	rt, driverDSN, err := config.NewRuntime("sqlserver",
		"sqlserver://app@localhost?database=shop&retryRefresh=100ms&retryBudget=off&retryProperties="+url.PathEscape(path),
		config.WithObserver(reloads{}))
	if err != nil {
		return err
	}
	fmt.Println("driver DSN:", driverDSN)

	run := func(step string, want int) error {
		time.Sleep(150 * time.Millisecond) // let retryRefresh pass
		attempts := 0
		err := rt.Retrier().Do(context.Background(), "update stock set n = n - 1", func(context.Context) error {
			attempts++
			return deadlock{}
		})
		fmt.Printf("%s: %d attempts (%v)\n", step, attempts, err)
		if attempts != want {
			return fmt.Errorf("%s: %d attempts, want %d", step, attempts, want)
		}
		return nil
	}
	if err := run("start, retryExec={1205:1,10ms+0}", 2); err != nil {
		return err
	}
	write("retryExec={1205:3,10ms+0}\n")
	if err := run("edited to {1205:3,10ms+0}", 4); err != nil {
		return err
	}
	write("retryExec={1205:3,10ms+0}\nretryExec={1205:two}\n")
	if err := run("broken on line 2", 4); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	if err := run("deleted", 4); err != nil {
		return err
	}
	return writeErr
}
