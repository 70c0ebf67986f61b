// Command mysql runs the policy of the MySQL retry-storm post-mortem that
// crl's budget and execution cut-off answer, against a real MySQL or
// MariaDB server:
//
//	retryExec={timeout,badconn:2,100ms*2}  retry time-outs and broken connections twice
//	queryTimeout=2                         bound each attempt on the client
//	executionCutoff=1                      and make the server stop it first
//	the retry budget (on by default)       so a storm costs ~1 execution per request
//
// The server's cut-off sits below the client's timeout: the server stops
// the statement and answers with an error, and the connection stays in the
// pool (a client-side timeout makes go-sql-driver/mysql close it).
//
// It needs a server: -dsn, else $CRL_MYSQL_DSN, else
// root@tcp(127.0.0.1:3306)/test.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/sqlxcrl"
)

func main() {
	dsn := flag.String("dsn", "", "a go-sql-driver/mysql DSN (default: $CRL_MYSQL_DSN, else root@tcp(127.0.0.1:3306)/test)")
	flag.Parse()
	if *dsn == "" {
		*dsn = os.Getenv("CRL_MYSQL_DSN")
	}
	if *dsn == "" {
		*dsn = "root@tcp(127.0.0.1:3306)/test"
	}
	if err := run(*dsn); err != nil {
		fmt.Fprintln(os.Stderr, "mysql example:", err)
		os.Exit(1)
	}
}

// counter counts executions: the first attempts and the retries.
type counter struct {
	core.NopObserver
	retries atomic.Int64
}

func (c *counter) RetryScheduled(core.RetryScheduled) { c.retries.Add(1) }

func run(dsn string) error {
	ctx := context.Background()
	sep := "?"
	for _, c := range dsn {
		if c == '?' {
			sep = "&"
		}
	}
	policy := sep + "retryExec={timeout,badconn:2,100ms*2}&queryTimeout=2&executionCutoff=1"
	db, err := sqlxcrl.ConnectContext(ctx, "mysql", dsn+policy)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer db.Close()

	fmt.Println("1. a slow statement, stopped by the server after 1 s, retried twice:")
	start := time.Now()
	_, err = db.ExecContext(ctx, "SELECT SLEEP(3)")
	fmt.Printf("   %v after %v\n", err, time.Since(start).Round(100*time.Millisecond))
	if !core.IsTimeout(err) {
		return fmt.Errorf("want a timeout, got %w", err)
	}
	var left int
	if err := db.GetContext(ctx, &left, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(3)%'"); err != nil {
		return err
	}
	fmt.Printf("   statements still running on the server: %d\n", left)

	fmt.Println("2. a storm: every statement times out; executions per request:")
	for _, budget := range []bool{false, true} {
		n, err := storm(ctx, dsn+sep+"retryExec={timeout:2,10ms*2}&queryTimeout=1&executionCutoff=20ms", budget)
		if err != nil {
			return err
		}
		name := "without a budget (the JDBC driver)"
		if budget {
			name = "with crl's retry budget        "
		}
		fmt.Printf("   %s %.2f\n", name, n)
	}
	return nil
}

// storm runs 60 requests against a statement that always times out, and
// returns the executions per request. (They run one after the other:
// MariaDB 10.11 interrupts concurrent SLEEPs late, in steps of about 2 s.)
func storm(ctx context.Context, dsn string, budget bool) (float64, error) {
	c := &counter{}
	opts := []sqlxcrl.Option{config.WithObserver(c), config.WithRetryBudget(core.BudgetSettings{Max: 20})}
	if !budget {
		opts = append(opts, config.WithoutRetryBudget())
	}
	db, err := sqlxcrl.ConnectContext(ctx, "mysql", dsn, opts...)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	const requests = 60
	for range requests {
		_, err := db.ExecContext(ctx, "SELECT SLEEP(1)")
		switch {
		case err == nil:
			return 0, errors.New("storm: a statement that should time out succeeded")
		case !core.IsTimeout(err) && !errors.Is(err, core.ErrRetryBudgetExceeded):
			return 0, fmt.Errorf("storm: %w", err)
		}
	}
	return (requests + float64(c.retries.Load())) / requests, nil
}
