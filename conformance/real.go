package conformance

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

// Database is a real database named by an environment variable.
type Database struct {
	Name   string // "mariadb" or "postgres"
	Env    string // CRL_MYSQL_DSN or CRL_POSTGRES_DSN
	Driver string // the database/sql driver: "mysql" or "pgx"
	DSN    string // the variable's value; "" when it is not set
}

// Databases returns MariaDB (CRL_MYSQL_DSN, driver mysql) and PostgreSQL
// (CRL_POSTGRES_DSN, driver pgx), with their DSNs as the environment has
// them.
func Databases() []Database {
	return []Database{
		{Name: "mariadb", Env: "CRL_MYSQL_DSN", Driver: "mysql", DSN: os.Getenv("CRL_MYSQL_DSN")},
		{Name: "postgres", Env: "CRL_POSTGRES_DSN", Driver: "pgx", DSN: os.Getenv("CRL_POSTGRES_DSN")},
	}
}

// EachDatabase runs fn as a subtest per database of Databases; the subtest
// of a database whose DSN is not set skips.
func EachDatabase(t *testing.T, fn func(t *testing.T, db Database)) {
	for _, db := range Databases() {
		t.Run(db.Name, func(t *testing.T) {
			if db.DSN == "" {
				t.Skipf("%s is not set", db.Env)
			}
			fn(t, db)
		})
	}
}

// DatabaseNamed returns the database of Databases named name ("mariadb"
// or "postgres"), for a check that only that database can show; it skips
// t when the database's DSN is not set.
func DatabaseNamed(t *testing.T, name string) Database {
	t.Helper()
	for _, d := range Databases() {
		if d.Name == name {
			if d.DSN == "" {
				t.Skipf("%s is not set", d.Env)
			}
			return d
		}
	}
	t.Fatalf("no database named %q: expected mariadb or postgres", name)
	return Database{}
}

// Hold runs stmt in a transaction of its own on db, so that another
// transaction waits for the locks it takes, and rolls that transaction
// back after d; the channel receives the rollback's error.
func Hold(t *testing.T, db *sql.DB, stmt string, d time.Duration) <-chan error {
	t.Helper()
	ctx := context.Background()
	holder, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = holder.ExecContext(ctx, stmt)
	require.NoError(t, err, stmt)
	released := make(chan error, 1)
	time.AfterFunc(d, func() { released <- holder.Rollback() })
	return released
}

// With returns the DSN with the URL parameters params (a=b&c=d) added.
func (d Database) With(params string) string {
	if params == "" {
		return d.DSN
	}
	if strings.Contains(d.DSN, "?") {
		return d.DSN + "&" + params
	}
	return d.DSN + "?" + params
}

// Placeholder returns the database's placeholder for the i-th argument
// (from 1).
func (d Database) Placeholder(i int) string {
	if d.Driver == "pgx" {
		return fmt.Sprintf("$%d", i)
	}
	return "?"
}

// Table returns a table name that no other test uses: the tests of many
// packages share the databases.
func Table(prefix string) string {
	return fmt.Sprintf("%s_%d_%d", prefix, time.Now().UnixNano()%1e9, rand.IntN(1000))
}

// The checks against real databases.
var integrity = []check{
	{"deadlocked transfers lose and duplicate nothing", deadlockedTransfers},
	{"a batch under lock contention is not retried", batchUnderLockContention},
	{"an error while rows are read is the failed statement", rowsErrorIsTheFailedStatement},
	{"a COMMIT answered with ROLLBACK has a known outcome", commitAnsweredWithRollback},
	{"the server stops a statement at executionCutoff", executionCutoffStopsTheServer},
	{"a PREPARE the server refuses is the failed statement", refusedPrepareIsTheFailedStatement},
	{"the default budget retries every deadlock victim", contentionUnderTheDefaultBudget},
	{"the default budget retries every serialization failure", serializationUnderTheDefaultBudget},
	{"a cut-off met while rows are read is retried", cutoffWhileReading},
}

// openReal opens a handle on d with the DSN parameters params and closes it
// when the test ends.
func openReal(t *testing.T, open Open, d Database, params string, opts ...config.Option) Handle {
	t.Helper()
	h, err := open(t, d.Driver, d.With(params), opts...)
	require.NoError(t, err, "open %s", d.Name)
	t.Cleanup(func() { assert.NoError(t, h.Close(), "close the handle") })
	return h
}

// create creates a table (its columns in SQL) that is dropped when the
// test ends, and returns its name.
func create(t *testing.T, db *sql.DB, prefix, columns string) string {
	t.Helper()
	table := Table(prefix)
	mustExec(t, db, "CREATE TABLE "+table+" ("+columns+")")
	t.Cleanup(func() {
		_, err := db.Exec("DROP TABLE " + table)
		assert.NoError(t, err, "drop %s", table)
	})
	return table
}

func mustExec(t *testing.T, db *sql.DB, query string, args ...any) {
	t.Helper()
	_, err := db.Exec(query, args...)
	require.NoError(t, err, query)
}

func queryInt(t *testing.T, db *sql.DB, query string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, db.QueryRow(query).Scan(&n), query)
	return n
}

// retryCounter counts the retries the engine schedules.
type retryCounter struct {
	core.NopObserver
	retries atomic.Int64
}

func (c *retryCounter) RetryScheduled(core.RetryScheduled) { c.retries.Add(1) }

// deadlockedTransfers runs concurrent transfers that lock accounts in
// random order, so the server picks deadlock victims. The adapter's
// whole-transaction retry re-runs the victims; at the end no money is
// created or lost, every successful transfer has exactly one ledger row,
// and every balance is what the ledger says.
func deadlockedTransfers(t *testing.T, open Open) {
	EachDatabase(t, func(t *testing.T, d Database) {
		rules, params := "{1213,1205:30,5ms*1.5}", ""
		if d.Name == "postgres" {
			// Detect deadlocks in 50 ms, not PostgreSQL's default 1 s (a
			// runtime parameter that pgx sends at startup).
			rules, params = "{40P01,40001:30,5ms*1.5}", "deadlock_timeout=50ms"
		}
		counter := &retryCounter{}
		h := openReal(t, open, d, params, config.WithRetryExec(rules), config.WithObserver(counter),
			config.WithRetryBudget(core.BudgetSettings{Max: 10000}))
		ok, failed := runTransfers(t, h, d, 4, 8, 25, false)
		t.Logf("%s: %d transfers committed, %d gave up, %d retries", d.Name, ok, failed, counter.retries.Load())
	})
}

// batchUnderLockContention runs a two-statement batch in autocommit mode
// whose second statement waits for a row lock that another transaction
// holds, until the server's lock time-out (MariaDB with
// multiStatements=true). On MariaDB the first UPDATE has committed when
// the second fails with 1205, so a retry of the batch would apply it
// again. The batch is not retried: it ran once, the error says so, and
// the rows hold exactly what that one run committed. In a transaction the
// same work is retried as a whole.
func batchUnderLockContention(t *testing.T, open Open) {
	EachDatabase(t, func(t *testing.T, d Database) {
		// MariaDB commits each statement of the batch on its own.
		params, rules, lockTimeout, firstCommitted := "multiStatements=true", "{1205:3,0}", "SET SESSION innodb_lock_wait_timeout = 1", 1
		if d.Name == "postgres" {
			// PostgreSQL runs a simple-protocol batch in one implicit
			// transaction: the lock time-out rolls all of it back.
			params, rules, lockTimeout, firstCommitted = "", "{55P03:3,0}", "SET lock_timeout = '300ms'", 0
		}
		h := openReal(t, open, d, params, config.WithRetryExec(rules))
		db := h.DB()
		a := create(t, db, "crl_batch_a", "id INT PRIMARY KEY, n INT NOT NULL")
		b := create(t, db, "crl_batch_b", "id INT PRIMARY KEY, n INT NOT NULL")
		for _, tbl := range []string{a, b} {
			mustExec(t, db, "INSERT INTO "+tbl+" (id, n) VALUES (1, 0)")
		}

		// Another transaction holds the row of b.
		ctx := context.Background()
		holder, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		_, err = holder.ExecContext(ctx, "UPDATE "+b+" SET n = n WHERE id = 1")
		require.NoError(t, err)

		incA, incB := "UPDATE "+a+" SET n = n + 1 WHERE id = 1", "UPDATE "+b+" SET n = n + 1 WHERE id = 1"
		err = h.Exec(ctx, lockTimeout+"; "+incA+"; "+incB)
		require.NoError(t, holder.Rollback())
		require.Error(t, err)
		assert.ErrorIs(t, err, core.ErrBatchNotRetried)
		assert.Contains(t, err.Error(), "1 attempt")
		na := queryInt(t, db, "SELECT n FROM "+a+" WHERE id = 1")
		assert.Equal(t, int64(firstCommitted), na, "the first UPDATE was applied %d times", na)
		assert.Zero(t, queryInt(t, db, "SELECT n FROM "+b+" WHERE id = 1"))

		require.NoError(t, h.InTx(ctx, func(tx Tx) error {
			if err := tx.Exec(incA); err != nil {
				return err
			}
			return tx.Exec(incB)
		}))
		assert.Equal(t, int64(firstCommitted+1), queryInt(t, db, "SELECT n FROM "+a+" WHERE id = 1"))
	})
}

// rowsErrorIsTheFailedStatement: an error that arrives while the rows of a
// query are read is the failed statement of the transaction. On MariaDB,
// INSERT … RETURNING of two rows whose second waits for a lock another
// transaction holds fails while the rows are read, not from the query
// call. The rule, whose filter names insert, retries the transaction.
func rowsErrorIsTheFailedStatement(t *testing.T, open Open) {
	d := DatabaseNamed(t, "mariadb")
	h := openReal(t, open, d, "innodb_lock_wait_timeout=1", config.WithRetryExec("{1205:3,0:insert}"))
	table := create(t, h.DB(), "crl_rows_err", "id INT PRIMARY KEY")
	// Released after the first attempt's time-out.
	released := Hold(t, h.DB(), "INSERT INTO "+table+" (id) VALUES (1)", 1500*time.Millisecond)

	runs := 0
	err := h.InTx(context.Background(), func(tx Tx) error {
		runs++
		return tx.ReadAll("INSERT INTO " + table + " (id) VALUES (2), (1) RETURNING id")
	})
	require.NoError(t, <-released)
	require.NoError(t, err)
	assert.Equal(t, 2, runs)
	assert.Equal(t, int64(2), queryInt(t, h.DB(), "SELECT COUNT(*) FROM "+table))
}

// commitAnsweredWithRollback: on PostgreSQL, a COMMIT of a transaction in
// which a statement failed is answered with ROLLBACK, which pgx reports as
// ErrTxCommitRollback. Its outcome is known, nothing was applied: it is
// not core.ErrCommitUnknown (before, it was, telling the caller that the
// write may have happened).
func commitAnsweredWithRollback(t *testing.T, open Open) {
	d := DatabaseNamed(t, "postgres")
	h := openReal(t, open, d, "", config.WithRetryExec("{40001,40P01:3,0}"))
	table := create(t, h.DB(), "crl_commit_rb", "id INT PRIMARY KEY")

	runs := 0
	err := h.InTx(context.Background(), func(tx Tx) error {
		runs++
		if err := tx.Exec("INSERT INTO " + table + " (id) VALUES (1)"); err != nil {
			return err
		}
		_ = tx.Exec("SELECT 1/0") // fails; the closure goes on, the transaction is aborted
		return nil
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "commit unexpectedly resulted in rollback")
	assert.NotErrorIs(t, err, core.ErrCommitUnknown, "the server answered: nothing was applied")
	assert.Equal(t, 1, runs)
	assert.Zero(t, queryInt(t, h.DB(), "SELECT COUNT(*) FROM "+table), "the error matches what the database holds: nothing")
}

// executionCutoffStopsTheServer shows the server-side cut-off: with
// executionCutoff=200ms and no client-side timeout at all, the server
// itself stops a 3-second statement, the error is the timeout condition,
// and the rule {timeout:1,0+0} retries it once.
func executionCutoffStopsTheServer(t *testing.T, open Open) {
	EachDatabase(t, func(t *testing.T, d Database) {
		slow := "SELECT SLEEP(3)"
		if d.Name == "postgres" {
			slow = "SELECT pg_sleep(3)"
		}
		counter := &retryCounter{}
		h := openReal(t, open, d, "", config.WithRetryExec("{timeout:1,0+0}"),
			config.WithExecutionCutoff(200*time.Millisecond), config.WithObserver(counter))
		start := time.Now()
		err := h.Exec(context.Background(), slow)
		require.True(t, core.IsTimeout(err), "err = %v, want the server's cut-off (a timeout)", err)
		require.ErrorIs(t, err, core.ErrRetriesExhausted, "the cut-off is retried once, then given up")
		assert.LessOrEqual(t, time.Since(start), 2*time.Second, "two cut-off attempts")
		assert.Equal(t, int64(1), counter.retries.Load(), "retries")
	})
}

// refusedPrepareIsTheFailedStatement: the closure prepares an INSERT into
// a table that does not exist, which the server refuses at PREPARE
// (MariaDB 1146, PostgreSQL 42P01). The PREPARE is the failed statement:
// the rule, whose filter names insert, retries the transaction once, and
// the error after the retry is the server's. (sqlxcrl did not record a
// failed PREPARE: the filter saw no statement and did not retry.)
func refusedPrepareIsTheFailedStatement(t *testing.T, open Open) {
	EachDatabase(t, func(t *testing.T, d Database) {
		h := openReal(t, open, d, "", config.WithRetryExec("{1146,42P01:1,0:insert}"))
		missing := Table("crl_missing")
		runs := 0
		err := h.InTx(context.Background(), func(tx Tx) error {
			runs++
			stmt, err := prepare(t, tx, "INSERT INTO "+missing+" (id) VALUES (1)")
			if err != nil {
				return err
			}
			return stmt.Exec()
		})
		require.Error(t, err)
		assert.ErrorIs(t, err, core.ErrRetriesExhausted)
		assert.Equal(t, 2, runs, "runs")
	})
}

// contentionUnderTheDefaultBudget is the deadlock storm of a healthy
// database with every setting at its default but the rule: 8 workers
// make 960 transfers between 4 accounts in random lock order, so the
// server picks deadlock victims, often in bursts. Deadlock victims are
// contention, cheap for the retry budget: not one retry is refused, not
// one transfer fails, and the ledger holds exactly the transfers made.
func contentionUnderTheDefaultBudget(t *testing.T, open Open) {
	EachDatabase(t, func(t *testing.T, d Database) {
		rules, params := "{1213,1205:30,5ms*1.5}", ""
		if d.Name == "postgres" {
			rules, params = "{40P01,40001:30,5ms*1.5}", "deadlock_timeout=50ms"
		}
		counter := &retryCounter{}
		h := openReal(t, open, d, params, config.WithRetryExec(rules), config.WithObserver(counter))
		ok, failed := runTransfers(t, h, d, 4, 8, 120, false)
		assert.Zero(t, failed, "transfers failed")
		assert.Equal(t, int64(960), ok)
		t.Logf("%s: %d transfers, %d retries under the default budget", d.Name, ok, counter.retries.Load())
	})
}

// serializationUnderTheDefaultBudget is the REPEATABLE READ workload of
// PostgreSQL: 6 workers make 360 transfers between 6 accounts, each
// reading a balance and writing it back, crediting the other account and
// writing a ledger row, so concurrent transfers fail with serialization
// failures (40001) and deadlocks (40P01). With the default budget every
// one is retried: no transfer fails.
func serializationUnderTheDefaultBudget(t *testing.T, open Open) {
	d := DatabaseNamed(t, "postgres")
	counter := &retryCounter{}
	h := openReal(t, open, d, "default_transaction_isolation=repeatable%20read&deadlock_timeout=50ms",
		config.WithRetryExec("{40001,40P01:12,5ms*2}"), config.WithObserver(counter))
	ok, failed := runTransfers(t, h, d, 6, 6, 60, true)
	assert.Zero(t, failed, "transfers failed")
	assert.Equal(t, int64(360), ok)
	t.Logf("%d transfers, %d retries under the default budget", ok, counter.retries.Load())
}

// runTransfers makes perWorker transfers of 1 from each of workers
// goroutines between n accounts through h.InTx, and checks afterwards on
// the server that no money was created or lost, that every committed
// transfer has exactly one ledger row and that every balance is what the
// ledger says. readFirst makes each transfer read the source balance and
// write the new one back (a read-modify-write, as under REPEATABLE READ);
// otherwise it debits in place. A failed transfer must have used up its
// retries (never a budget refusal). It returns the transfers committed and
// failed.
func runTransfers(t *testing.T, h Handle, d Database, n, workers, perWorker int, readFirst bool) (ok, failed int64) {
	t.Helper()
	db := h.DB()
	accounts := create(t, db, "crl_acc", "id INT PRIMARY KEY, balance BIGINT NOT NULL")
	ledger := create(t, db, "crl_ledger", "src INT NOT NULL, dst INT NOT NULL, amount BIGINT NOT NULL")
	const initial = 1000
	for i := 1; i <= n; i++ {
		mustExec(t, db, fmt.Sprintf("INSERT INTO %s (id, balance) VALUES (%d, %d)", accounts, i, initial))
	}
	p := d.Placeholder
	read := fmt.Sprintf("SELECT balance FROM %s WHERE id = %s", accounts, p(1))
	set := fmt.Sprintf("UPDATE %s SET balance = %s WHERE id = %s", accounts, p(1), p(2))
	debit := fmt.Sprintf("UPDATE %s SET balance = balance - %s WHERE id = %s", accounts, p(1), p(2))
	credit := fmt.Sprintf("UPDATE %s SET balance = balance + %s WHERE id = %s", accounts, p(1), p(2))
	record := fmt.Sprintf("INSERT INTO %s (src, dst, amount) VALUES (%s, %s, %s)", ledger, p(1), p(2), p(3))
	transfer := func(src, dst int) error {
		return h.InTx(context.Background(), func(tx Tx) error {
			if readFirst {
				balance, err := readInt(tx, read, src)
				if err != nil {
					return err
				}
				if err := tx.Exec(set, balance-1, src); err != nil {
					return err
				}
			} else if err := tx.Exec(debit, 1, src); err != nil {
				return err
			}
			time.Sleep(time.Millisecond) // widen the window for conflicts
			if err := tx.Exec(credit, 1, dst); err != nil {
				return err
			}
			return tx.Exec(record, src, dst, 1)
		})
	}
	var okN, failedN atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				src := rand.IntN(n) + 1
				dst := (src+rand.IntN(n-1))%n + 1
				if err := transfer(src, dst); err != nil {
					failedN.Add(1)
					assert.NotErrorIs(t, err, core.ErrRetryBudgetExceeded, "the default budget refused a contention retry")
					assert.ErrorIs(t, err, core.ErrRetriesExhausted, "a transfer that fails has used up its retries")
					continue
				}
				okN.Add(1)
			}
		}()
	}
	wg.Wait()
	checkLedger(t, db, accounts, ledger, n, initial, okN.Load())
	return okN.Load(), failedN.Load()
}

// checkLedger checks on the server that the n accounts of initial each
// still hold n*initial in all, that ledger has one row per committed
// transfer, and that every balance is what the ledger says.
func checkLedger(t *testing.T, db *sql.DB, accounts, ledger string, n int, initial, committed int64) {
	t.Helper()
	assert.Equal(t, int64(n)*initial, queryInt(t, db, "SELECT SUM(balance) FROM "+accounts), "money created or lost")
	assert.Equal(t, committed, queryInt(t, db, "SELECT COUNT(*) FROM "+ledger), "one ledger row per committed transfer")
	for id := 1; id <= n; id++ {
		balance := queryInt(t, db, fmt.Sprintf("SELECT balance FROM %s WHERE id = %d", accounts, id))
		in := queryInt(t, db, fmt.Sprintf("SELECT COALESCE(SUM(amount), 0) FROM %s WHERE dst = %d", ledger, id))
		out := queryInt(t, db, fmt.Sprintf("SELECT COALESCE(SUM(amount), 0) FROM %s WHERE src = %d", ledger, id))
		assert.Equal(t, initial+in-out, balance, "account %d: the balance the ledger says", id)
	}
}

// readInt reads one integer in tx, for a read-modify-write.
func readInt(tx Tx, query string, args ...any) (int64, error) {
	r, ok := tx.(ReadingTx)
	if !ok {
		return 0, fmt.Errorf("conformance: the adapter's Tx cannot read a value (ReadingTx)")
	}
	return r.ReadInt(query, args...)
}

// cutoffWhileReading is the post-mortem's slow query under the execution
// cut-off: the server sends the result's header and then stops the
// statement (MariaDB 1969, PostgreSQL 57014), so the error arrives while
// the rows are read. Read through the adapter's whole-result reads
// (ReadAll, ReadOne: sqlxcrl's Select and Get, GORM's Find), it is inside
// the statement loop: the rule {timeout:1,0} retries it once and the loop
// gives up with the server's error, the retry and the give-up observed.
func cutoffWhileReading(t *testing.T, open Open) {
	EachDatabase(t, func(t *testing.T, d Database) {
		slow := "SELECT count(*) FROM seq_1_to_20000 a, seq_1_to_20000 b WHERE a.seq + b.seq = 7"
		if d.Name == "postgres" {
			slow = "SELECT count(*) FROM generate_series(1, 200000000) g"
		}
		for _, read := range []struct {
			name string
			run  func(h Handle) error
		}{
			{"ReadAll", func(h Handle) error { _, err := h.ReadAll(context.Background(), slow); return err }},
			{"ReadOne", func(h Handle) error { _, err := h.ReadOne(context.Background(), slow); return err }},
		} {
			t.Run(read.name, func(t *testing.T) {
				counter := &giveUpCounter{}
				h := openReal(t, open, d, "", config.WithRetryExec("{timeout:1,0}"),
					config.WithExecutionCutoff(200*time.Millisecond), config.WithObserver(counter))
				start := time.Now()
				err := read.run(h)
				require.Error(t, err)
				assert.True(t, core.IsTimeout(err), "err = %v, want the server's cut-off", err)
				assert.ErrorIs(t, err, core.ErrRetriesExhausted, "retried once, then given up")
				assert.Equal(t, int64(1), counter.retries.Load(), "retries")
				assert.Equal(t, int64(1), counter.giveUps.Load(), "give-ups")
				assert.Less(t, time.Since(start), 3*time.Second, "two cut-off attempts")
			})
		}
	})
}

// giveUpCounter counts retries and give-ups.
type giveUpCounter struct {
	retryCounter
	giveUps atomic.Int64
}

func (c *giveUpCounter) GaveUp(core.GaveUp) { c.giveUps.Add(1) }
