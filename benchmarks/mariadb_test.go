package benchmarks

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/crl-go/crl/core"
)

// The real-server storm, scaled to run in under a minute per run of all
// three policies: a statement holds one server-side named lock for its
// service time (80 ms: a capacity of 12.5 statements/s), clients offer 10
// requests/s through a pool of 30 connections and give up on an attempt
// after 500 ms; for 5 s the service time doubles (6.25 statements/s). Every statement first calls a stored
// function that counts it, so the executions are counted by the server at
// arrival, whether or not the client is still waiting: a client that gives
// up closes its connection (go-sql-driver/mysql), and MariaDB keeps running
// the statement, as in the post-mortem. (The function inserts a row with a
// UUID_SHORT() key into an InnoDB table: a counter row, a MEMORY table or
// an AUTO_INCREMENT key would be locked for the whole statement, since the
// tables of a stored function are locked when the statement starts, and
// would serialise the statements on the counter.) A statement waits at
// most 1.5 s for the lock, which bounds the server threads that abandoned
// statements hold (the server is shared with other tests).
const (
	mariaRate       = 10.0
	mariaService    = 80 * time.Millisecond
	mariaDegradeAt  = 2 * time.Second
	mariaDegradeFor = 5 * time.Second
	mariaObserve    = 8 * time.Second // after the capacity returns
	mariaTimeout    = 500 * time.Millisecond
	mariaLockWait   = "1.5" // seconds a statement waits for the lock
	mariaPool       = 30
)

type mariaResult struct {
	policy                  string
	requests, executions    int // while degraded
	allRequests, allExecute int
	failed                  int
	recovery                time.Duration
}

// BenchmarkStormMariaDB runs the storm against the MariaDB of
// CRL_MYSQL_DSN for no retry, the JDBC CRL schedule without a budget and
// crl's default, and reports the executions per request the server
// counted while degraded and the time to recover.
func BenchmarkStormMariaDB(b *testing.B) {
	dsn := os.Getenv("CRL_MYSQL_DSN")
	if dsn == "" {
		b.Skip("CRL_MYSQL_DSN is not set")
	}
	admin, err := sql.Open("mysql", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close()
	sfx := fmt.Sprintf("%d_%d", time.Now().UnixNano()%1_000_000_000, rand.IntN(1_000_000))
	table, fn, lock := "crl_storm_"+sfx, "crl_storm_arrive_"+sfx, "crl_storm_"+sfx
	ctx := context.Background()
	for _, q := range []string{
		"CREATE TABLE " + table + " (id BIGINT UNSIGNED PRIMARY KEY) ENGINE=InnoDB",
		"CREATE FUNCTION " + fn + "() RETURNS INT MODIFIES SQL DATA BEGIN INSERT INTO " + table + " VALUES (UUID_SHORT()); RETURN 0; END",
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
	defer func() {
		_, _ = admin.ExecContext(ctx, "DROP FUNCTION IF EXISTS "+fn)
		_, _ = admin.ExecContext(ctx, "DROP TABLE IF EXISTS "+table)
	}()
	// The count reads uncommitted rows: a statement's row exists from its
	// arrival, and is committed only when the statement ends.
	counter, err := admin.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer counter.Close()
	if _, err := counter.ExecContext(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL READ UNCOMMITTED"); err != nil {
		b.Fatal(err)
	}
	count := func() int {
		defer func(t time.Time) {
			if d := time.Since(t); d > 20*time.Millisecond {
				b.Logf("counting took %v", d)
			}
		}(time.Now())
		var n int
		if err := counter.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
			b.Fatal(err)
		}
		return n
	}
	stmt := "DO " + fn + "(), IF(GET_LOCK('" + lock + "', " + mariaLockWait + "), SLEEP(?) + RELEASE_LOCK('" + lock + "'), 0)"

	var results []mariaResult
	for _, p := range []RetryPolicy{
		{Name: "no retry"},
		{Name: "JDBC CRL, no budget", Rules: "{timeout:3,125ms*2}"},
		{Name: "crl default", Rules: "{timeout:3,125ms*2}", Budget: true},
	} {
		r, err := p.retrier(core.Policy{QueryTimeout: mariaTimeout}, core.Options{})
		if err != nil {
			b.Fatal(err)
		}
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			b.Fatal(err)
		}
		db.SetMaxOpenConns(mariaPool)
		db.SetMaxIdleConns(mariaPool)
		res := runMariaStorm(r, db, stmt, count)
		res.policy = p.Name
		results = append(results, res)
		db.Close()
		// Let the statements the clients gave up on end on the server.
		time.Sleep(2500 * time.Millisecond)
	}
	var baseline time.Duration
	for _, res := range results {
		if res.policy == "no retry" {
			baseline = res.recovery
		}
		b.Run(res.policy, func(b *testing.B) {
			for b.Loop() {
			}
			b.ReportMetric(float64(res.executions)/float64(res.requests), "executions/request")
			b.ReportMetric(res.recovery.Seconds(), "recovery-s")
		})
	}
	b.Logf("\n| policy | executions/request while degraded (server count) | whole run | failed requests | recovery | ÷ no retry |\n|---|---|---|---|---|---|")
	for _, res := range results {
		b.Logf("| %s | %.2f (%d / %d) | %.2f | %d of %d | %.1f s | %.2f |", res.policy,
			float64(res.executions)/float64(res.requests), res.executions, res.requests,
			float64(res.allExecute)/float64(res.allRequests), res.failed, res.allRequests,
			res.recovery.Seconds(), res.recovery.Seconds()/max(baseline.Seconds(), 0.001))
	}
}

// runMariaStorm offers mariaRate requests/s for the whole scenario and
// waits for the last one.
func runMariaStorm(r *core.Retrier, db *sql.DB, stmt string, count func() int) mariaResult {
	var (
		res          mariaResult
		service      atomic.Int64
		lastTimeout  atomic.Int64 // since start
		failed       atomic.Int64
		wg, counting sync.WaitGroup
	)
	service.Store(int64(mariaService))
	start := time.Now()
	end := mariaDegradeAt + mariaDegradeFor
	before := count()
	var atDegrade, atRestore int
	tick := time.NewTicker(time.Duration(float64(time.Second) / mariaRate))
	defer tick.Stop()
	phase := 0
	for now := range tick.C {
		t := now.Sub(start)
		// Count on the side: a count can take a while under load, and the
		// requests must keep their pace.
		if phase == 0 && t >= mariaDegradeAt {
			phase = 1
			counting.Add(1)
			go func() { defer counting.Done(); atDegrade = count() }()
			service.Store(int64(2 * mariaService))
		}
		if phase == 1 && t >= end {
			phase = 2
			counting.Add(1)
			go func() { defer counting.Done(); atRestore = count() }()
			service.Store(int64(mariaService))
		}
		if t >= end+mariaObserve {
			break
		}
		res.allRequests++
		if phase == 1 {
			res.requests++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sleep := time.Duration(service.Load()).Seconds()
			err := r.Do(context.Background(), stmt, func(ctx context.Context) error {
				_, err := db.ExecContext(ctx, stmt, sleep)
				if err != nil && ctx.Err() != nil {
					lastTimeout.Store(int64(time.Since(start)))
				}
				return err
			})
			if err != nil {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	counting.Wait()
	res.executions = atRestore - atDegrade
	res.allExecute = count() - before
	res.failed = int(failed.Load())
	res.recovery = max(time.Duration(lastTimeout.Load())-end, 0)
	return res
}
