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
	f := &propertiesFile{path: filepath.Join(dir, "mssql-jdbc.properties"), mtime: time.Now()}
	if err := f.write("retryExec={1205:1,10ms+0}\n"); err != nil {
		return err
	}

	// Every statement of this demo fails, which the retry budget would
	// rightly treat as a storm: it is off so that each edit's retries show.
	rt, driverDSN, err := config.NewRuntime("sqlserver",
		"sqlserver://app@localhost?database=shop&retryRefresh=100ms&retryBudget=off&retryProperties="+url.PathEscape(f.path),
		config.WithObserver(reloads{}))
	if err != nil {
		return err
	}
	fmt.Println("driver DSN:", driverDSN)

	for _, s := range []struct {
		edit func() error // nil: none
		name string
		want int // attempts
	}{
		{nil, "start, retryExec={1205:1,10ms+0}", 2},
		{func() error { return f.write("retryExec={1205:3,10ms+0}\n") }, "edited to {1205:3,10ms+0}", 4},
		{func() error { return f.write("retryExec={1205:3,10ms+0}\nretryExec={1205:two}\n") }, "broken on line 2", 4},
		{func() error { return os.Remove(f.path) }, "deleted", 4},
	} {
		if s.edit != nil {
			if err := s.edit(); err != nil {
				return err
			}
		}
		if err := step(rt, s.name, s.want); err != nil {
			return err
		}
	}
	return nil
}

// propertiesFile is the demo's mssql-jdbc.properties.
type propertiesFile struct {
	path  string
	mtime time.Time
}

// write saves content, with a modification time a second after the
// last write's, as if saved a second later, for file systems with
// coarse times.
func (f *propertiesFile) write(content string) error {
	if err := os.WriteFile(f.path, []byte(content), 0o644); err != nil {
		return err
	}
	f.mtime = f.mtime.Add(time.Second)
	return os.Chtimes(f.path, f.mtime, f.mtime)
}

// step runs, once retryRefresh has passed, a statement that always fails
// as a deadlock victim, and checks that it ran want attempts.
func step(rt *config.Runtime, name string, want int) error {
	time.Sleep(150 * time.Millisecond) // let retryRefresh pass
	attempts := 0
	err := rt.Retrier().Do(context.Background(), "update stock set n = n - 1", func(context.Context) error {
		attempts++
		return deadlock{}
	})
	fmt.Printf("%s: %d attempts (%v)\n", name, attempts, err)
	if attempts != want {
		return fmt.Errorf("%s: %d attempts, want %d", name, attempts, want)
	}
	return nil
}
