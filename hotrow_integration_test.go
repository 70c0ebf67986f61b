package crl_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/conformance"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/sqlxcrl"
)

// The hot row on the real servers (issue 29): twelve workers increment
// one counter, each increment a whole transaction retried under the
// default retry budget. On a hot row most attempts may fail, yet one
// commits in every round: the database makes progress, and the budget
// must retry every conflict. The tests run through crl.RunInTx on a
// plain *sql.DB and through sqlxcrl's RunInTx (hotRowWays), with full
// jitter, as contending clients should: under the exact schedule the
// workers that failed together wait alike and meet again, and the last
// one often needs its last attempt (docs/semantics.md, "Jitter").

const (
	hotRowWorkers    = 12
	hotRowIncrements = 8 // per worker
)

// hotRowTx is what an increment needs of a transaction: *sqlxcrl.Tx has
// it, and so has *sql.Tx, so that the workload can run through any
// whole-transaction retry (crl.RunInTx takes a func(*sql.Tx) error).
type hotRowTx interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// hotRowRunner runs fn as a whole transaction, retried under the handle's
// rules and budget.
type hotRowRunner func(ctx context.Context, opts *sql.TxOptions, fn func(tx hotRowTx) error) error

// hotRowOutcome counts what the retries did.
type hotRowOutcome struct {
	core.NopObserver
	retries atomic.Int64
}

func (o *hotRowOutcome) RetryScheduled(core.RetryScheduled) { o.retries.Add(1) }

// hotRowWays are the whole-transaction retries the hot row runs through:
// crl.RunInTx on a plain *sql.DB from crl.Open, and sqlxcrl's RunInTx.
var hotRowWays = []struct {
	name string
	open func(t *testing.T, d conformance.Database, rules string, o core.Observer) (*sql.DB, hotRowRunner)
}{
	{"crl.RunInTx", func(t *testing.T, d conformance.Database, rules string, o core.Observer) (*sql.DB, hotRowRunner) {
		db, err := crl.Open(d.Driver, d.DSN, crl.WithRetryExec(rules), config.WithJitter(core.JitterFull), config.WithObserver(o))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, db.Close()) })
		db.SetMaxOpenConns(hotRowWorkers + 2)
		return db, func(ctx context.Context, opts *sql.TxOptions, fn func(tx hotRowTx) error) error {
			return crl.RunInTx(ctx, db, opts, func(tx *sql.Tx) error { return fn(tx) })
		}
	}},
	{"sqlxcrl.RunInTx", func(t *testing.T, d conformance.Database, rules string, o core.Observer) (*sql.DB, hotRowRunner) {
		db, err := sqlxcrl.Open(d.Driver, d.DSN, sqlxcrl.WithRetryExec(rules), config.WithJitter(core.JitterFull), config.WithObserver(o))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, db.Close()) })
		db.SetMaxOpenConns(hotRowWorkers + 2)
		return db.DB.DB, func(ctx context.Context, opts *sql.TxOptions, fn func(tx hotRowTx) error) error {
			return db.RunInTx(ctx, opts, func(tx *sqlxcrl.Tx) error { return fn(tx) })
		}
	}},
}

// hotRowTable creates a counter table with rows 1..rows at 0, dropped
// when the test ends.
func hotRowTable(t *testing.T, db *sql.DB) string {
	t.Helper()
	ctx := context.Background()
	table := conformance.Table("crl_hotrow")
	_, err := db.ExecContext(ctx, "CREATE TABLE "+table+" (id INT PRIMARY KEY, n BIGINT NOT NULL)")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = db.ExecContext(context.Background(), "DROP TABLE "+table) })
	_, err = db.ExecContext(ctx, "INSERT INTO "+table+" (id, n) VALUES (1, 0), (2, 0)")
	require.NoError(t, err)
	return table
}

// runHotRow runs hotRowIncrements increments on each of hotRowWorkers
// goroutines through run; increment(worker) is one. Every increment must
// commit: none refused by the budget, none failed at all.
func runHotRow(t *testing.T, run hotRowRunner, opts *sql.TxOptions, increment func(worker int, tx hotRowTx) error) {
	t.Helper()
	ctx := context.Background()
	var refused, failed atomic.Int64
	var wg sync.WaitGroup
	for w := range hotRowWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range hotRowIncrements {
				err := run(ctx, opts, func(tx hotRowTx) error { return increment(w, tx) })
				if err != nil {
					failed.Add(1)
					if errors.Is(err, core.ErrRetryBudgetExceeded) {
						refused.Add(1)
					}
					t.Logf("worker %d: %v", w, err)
				}
			}
		}()
	}
	wg.Wait()
	assert.Zero(t, refused.Load(), "increments refused by the retry budget")
	assert.Zero(t, failed.Load(), "increments that failed")
}

// readCounter reads row id of table.
func readCounter(t *testing.T, db *sql.DB, table string, id int) int64 {
	t.Helper()
	var n int64
	require.NoError(t, db.QueryRowContext(context.Background(), fmt.Sprintf("SELECT n FROM %s WHERE id = %d", table, id)).Scan(&n))
	return n
}

// PostgreSQL under REPEATABLE READ and SERIALIZABLE: each increment reads
// the counter and writes it back, so a concurrent commit fails the others
// with 40001 (or 40P01).
func TestHotRowPostgres(t *testing.T) {
	d := conformance.DatabaseNamed(t, "postgres")
	for _, way := range hotRowWays {
		for _, level := range []sql.IsolationLevel{sql.LevelRepeatableRead, sql.LevelSerializable} {
			t.Run(way.name+"/"+level.String(), func(t *testing.T) {
				hotRowPostgres(t, d, level, way.open)
			})
		}
	}
}

func hotRowPostgres(t *testing.T, d conformance.Database, level sql.IsolationLevel,
	openHotRow func(t *testing.T, d conformance.Database, rules string, o core.Observer) (*sql.DB, hotRowRunner)) {
	o := &hotRowOutcome{}
	db, run := openHotRow(t, d, "{40001,40P01:12,5ms*2}", o)
	table := hotRowTable(t, db)
	read := "SELECT n FROM " + table + " WHERE id = 1"
	write := "UPDATE " + table + " SET n = $1 WHERE id = 1"
	runHotRow(t, run, &sql.TxOptions{Isolation: level}, func(_ int, tx hotRowTx) error {
		ctx := context.Background()
		var n int64
		if err := tx.QueryRowContext(ctx, read).Scan(&n); err != nil {
			return err
		}
		// The work a real transaction does between its read and
		// its write: the others' attempts meet the row locked.
		time.Sleep(2 * time.Millisecond)
		_, err := tx.ExecContext(ctx, write, n+1)
		return err
	})
	assert.Equal(t, int64(hotRowWorkers*hotRowIncrements), readCounter(t, db, table, 1), "the counter")
	assert.Positive(t, o.retries.Load(), "the row was hot: conflicts were retried")
	t.Logf("%s: %d increments, %d retries", level, hotRowWorkers*hotRowIncrements, o.retries.Load())
}

// MariaDB: each increment locks both counters with SELECT … FOR UPDATE,
// half the workers row 1 first and the others row 2 first, so InnoDB
// finds deadlocks (1213) and picks victims.
func TestHotRowMariaDB(t *testing.T) {
	d := conformance.DatabaseNamed(t, "mariadb")
	for _, way := range hotRowWays {
		t.Run(way.name, func(t *testing.T) { hotRowMariaDB(t, d, way.open) })
	}
}

func hotRowMariaDB(t *testing.T, d conformance.Database,
	openHotRow func(t *testing.T, d conformance.Database, rules string, o core.Observer) (*sql.DB, hotRowRunner)) {
	o := &hotRowOutcome{}
	db, run := openHotRow(t, d, "{1213:12,5ms*2}", o)
	table := hotRowTable(t, db)
	lock := "SELECT n FROM " + table + " WHERE id = ? FOR UPDATE"
	write := "UPDATE " + table + " SET n = ? WHERE id = ?"
	runHotRow(t, run, nil, func(worker int, tx hotRowTx) error {
		ctx := context.Background()
		order := [2]int{1, 2}
		if worker%2 == 1 {
			order = [2]int{2, 1}
		}
		var n [2]int64
		for i, id := range order {
			if err := tx.QueryRowContext(ctx, lock, id).Scan(&n[i]); err != nil {
				return err
			}
			time.Sleep(time.Millisecond) // widen the window in which the other order locks the other row
		}
		for i, id := range order {
			if _, err := tx.ExecContext(ctx, write, n[i]+1, id); err != nil {
				return err
			}
		}
		return nil
	})
	for id := 1; id <= 2; id++ {
		assert.Equal(t, int64(hotRowWorkers*hotRowIncrements), readCounter(t, db, table, id), "counter %d", id)
	}
	assert.Positive(t, o.retries.Load(), "the rows were hot: deadlocks were retried")
	t.Logf("%d increments, %d retries", hotRowWorkers*hotRowIncrements, o.retries.Load())
}
