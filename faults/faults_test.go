package faults

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/jackc/pgx/v5"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/gormcrl"
	"github.com/crl-go/crl/pgxcrl"
	"github.com/crl-go/crl/sqlxcrl"

	_ "github.com/jackc/pgx/v5/stdlib"
)

const (
	// deadline is every transfer's; a call may return at most slack after it.
	deadline = 1200 * time.Millisecond
	slack    = 500 * time.Millisecond
	accounts = 4
	initial  = 1000
	// rules retries a whole transaction that broke before its COMMIT, or
	// could not connect (10061: refused): after 50, 100 and 200 ms.
	rules = "{badconn,timeout,10061:3,50ms*2}"
	// blip is how long a fault injected in the middle of a transaction
	// lasts: the retries outlast it, well within the deadline.
	blip = 100 * time.Millisecond
	// outage is how long the full outage under load lasts.
	outage = 2 * time.Second
)

// database is a real server named by an environment variable.
type database struct {
	name, env, driver string
}

var databases = []database{
	{"mariadb", "CRL_MYSQL_DSN", "mysql"},
	{"postgres", "CRL_POSTGRES_DSN", "pgx"},
}

// fault is a failure of the link: inject starts it on proxy, and the
// returned func ends it (it may run on another goroutine than the test's).
type fault struct {
	name   string
	inject func(t *testing.T, p *toxiproxy.Proxy) (heal func() error)
}

// toxic adds one toxic to p and returns what removes it.
func toxic(kind, stream string, attrs string) func(t *testing.T, p *toxiproxy.Proxy) func() error {
	return func(t *testing.T, p *toxiproxy.Proxy) func() error {
		name := kind + "_" + stream
		_, err := p.Toxics.AddToxicJson(strings.NewReader(fmt.Sprintf(
			`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":%s}`, name, kind, stream, attrs)))
		require.NoError(t, err, "add toxic %s", name)
		return func() error { return p.Toxics.RemoveToxic(context.Background(), name) }
	}
}

var faults = []fault{
	// The connection is reset as soon as COMMIT is sent.
	{"reset_peer", toxic("reset_peer", "upstream", `{"timeout":0}`)},
	// The link goes silent: nothing passes, nothing is closed.
	{"timeout", toxic("timeout", "upstream", `{"timeout":0}`)},
	// The answer to COMMIT is cut short: the connection closes after a
	// few bytes.
	{"limit_data", toxic("limit_data", "downstream", `{"bytes":3}`)},
	// The answer comes, long after the deadline.
	{"latency", toxic("latency", "downstream", `{"latency":2500,"jitter":300}`)},
	// A full outage: every connection closes, and no new one is accepted
	// until the proxy starts again.
	{"outage", func(t *testing.T, p *toxiproxy.Proxy) func() error {
		p.Stop()
		return p.Start
	}},
}

// ledger is the workload's state on one database: the tables, and what
// the client saw of every transfer.
type ledger struct {
	accountsTable, transfersTable string
	outcomes                      map[int64]error // transfer id → the error its call returned
}

// transfer is one transfer's statements, run in a transaction.
type transfer struct {
	id            int64
	from, to, amt int
}

// TestFaults runs the ledger workload on every database through both
// adapters and through the driver layer alone (crl.Open and crl.RunInTx
// on database/sql's own types), with every fault right before COMMIT, then in the middle of a
// transaction, then a full outage under load, and checks the ledger on
// the server.
func TestFaults(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			dsn := os.Getenv(db.env)
			if dsn == "" {
				t.Skipf("%s is not set", db.env)
			}
			for _, via := range []string{"sqlxcrl", "gormcrl", "crl", "pgxcrl"} {
				t.Run(via, func(t *testing.T) {
					if via == "pgxcrl" && db.driver != "pgx" {
						t.Skip("pgxcrl is PostgreSQL's")
					}
					runLedger(t, db, dsn, via)
				})
			}
		})
	}
}

func runLedger(t *testing.T, db database, dsn, via string) {
	raw, err := sql.Open(db.driver, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { raw.Close() }) // after the cleanups registered below, which use it
	ctx := context.Background()

	tag := fmt.Sprintf("faults_%s_%s_%d", db.name, via, rand.IntN(1<<20))
	l := &ledger{accountsTable: tag + "_accounts", transfersTable: tag + "_transfers", outcomes: map[int64]error{}}
	for _, s := range []string{
		"CREATE TABLE " + l.accountsTable + " (id INT PRIMARY KEY, balance BIGINT NOT NULL)",
		"CREATE TABLE " + l.transfersTable + " (id BIGINT PRIMARY KEY, src INT NOT NULL, dst INT NOT NULL, amount BIGINT NOT NULL)",
	} {
		_, err := raw.ExecContext(ctx, s)
		require.NoError(t, err, s)
	}
	defer func() {
		for _, table := range []string{l.transfersTable, l.accountsTable} {
			_, _ = raw.ExecContext(ctx, "DROP TABLE IF EXISTS "+table)
		}
	}()
	for i := range accounts {
		_, err := raw.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s (id, balance) VALUES (%d, %d)", l.accountsTable, i, initial))
		require.NoError(t, err)
	}

	// Whose connections are ours, on the server: a user of our own on
	// MariaDB, an application_name on PostgreSQL.
	clientDSN, countOurs := identify(t, raw, db, dsn, tag)

	before := ourGoroutines()
	proxy := startProxy(t, db, clientDSN)
	proxied := proxiedDSN(t, db, clientDSN, proxy.Listen)

	run, closeHandle, inUse := open(t, db, via, proxied)
	next := int64(1)
	// do runs one transfer under the deadline, calling at (when not nil)
	// at each point of each attempt.
	do := func(tr transfer, at func(point)) {
		callCtx, cancel := context.WithTimeout(ctx, deadline)
		defer cancel()
		start := time.Now()
		err := run(callCtx, l, tr, at)
		elapsed := time.Since(start)
		l.outcomes[tr.id] = err
		assert.LessOrEqual(t, elapsed, deadline+slack, "transfer %d returned %v after it began (deadline %v): %v", tr.id, elapsed, deadline, err)
	}
	newTransfer := func() transfer {
		tr := transfer{id: next, from: rand.IntN(accounts), amt: 1 + rand.IntN(50)}
		tr.to = (tr.from + 1 + rand.IntN(accounts-1)) % accounts
		next++
		return tr
	}

	healthy := func(f fault) {
		// The link is healthy again: the next transfers succeed.
		for range 2 {
			tr := newTransfer()
			do(tr, nil)
			assert.NoError(t, l.outcomes[tr.id], "%s healed: transfer %d", f.name, tr.id)
		}
	}

	// Each fault right before COMMIT: the outcome of every COMMIT is
	// unknown, and none is retried.
	for _, f := range faults {
		for range 2 {
			tr := newTransfer()
			var heal func() error
			do(tr, func(p point) {
				if p == beforeCommit && heal == nil { // a retried attempt does not inject it twice
					heal = f.inject(t, proxy)
				}
			})
			require.NotNil(t, heal, "%s: the closure ran to its end, so the fault was injected", f.name)
			require.NoError(t, heal())
			err := l.outcomes[tr.id]
			assert.Error(t, err, "%s: transfer %d: a COMMIT that failed on the wire is no success", f.name, tr.id)
			if f.name != "outage" || !errors.Is(err, core.ErrCommitUnknown) {
				// Every fault strikes once COMMIT is on its way, except an
				// outage, which may close the connection before it is sent.
				assert.ErrorIs(t, err, core.ErrCommitUnknown, "%s: transfer %d", f.name, tr.id)
			}
			healthy(f)
		}
	}

	// Each fault in the middle of a transaction, between its INSERT and
	// the read of every balance (limit_data cuts that result short), for
	// a blip that the transaction's retries outlast: no COMMIT was sent,
	// so every outcome is known, and a transfer retried after a broken
	// connection is applied once.
	for _, f := range faults {
		tr := newTransfer()
		var (
			healed = make(chan error, 1)
			once   sync.Once
		)
		do(tr, func(p point) {
			if p == midTransaction {
				once.Do(func() {
					heal := f.inject(t, proxy)
					time.AfterFunc(blip, func() { healed <- heal() })
				})
			}
		})
		require.NoError(t, <-healed, "%s: heal", f.name)
		err := l.outcomes[tr.id]
		assert.NotErrorIs(t, err, core.ErrCommitUnknown, "%s mid-transaction: transfer %d: no COMMIT was sent", f.name, tr.id)
		switch f.name {
		case "reset_peer", "limit_data", "outage":
			// The connection broke at once: the transaction is retried on a
			// new one once the blip is over.
			assert.NoError(t, err, "%s mid-transaction: transfer %d is retried", f.name, tr.id)
		default:
			// A silent or slow link holds the statement to the deadline
			// (or not, once the blip is over): either outcome is known.
			t.Logf("%s mid-transaction: transfer %d: %v", f.name, tr.id, err)
		}
		healthy(f)
	}

	// A full outage of outage under a steady load: no call outlives its
	// deadline by more than slack (the connection loop's attempts end with
	// the caller's context), and transfers succeed again once it is over.
	p := proxy
	p.Stop()
	restarted := make(chan error, 1)
	time.AfterFunc(outage, func() { restarted <- p.Start() })
	for end := time.Now().Add(outage + time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		do(newTransfer(), nil)
	}
	require.NoError(t, <-restarted)
	tr := newTransfer()
	do(tr, nil)
	assert.NoError(t, l.outcomes[tr.id], "after the outage: transfer %d", tr.id)

	assert.Eventually(t, func() bool { return inUse() == 0 }, 2*time.Second, 20*time.Millisecond, "no connection left in use")
	closeHandle()
	proxy.Stop()
	check(t, raw, l)
	assert.Eventually(t, func() bool { return countOurs() == 0 }, 5*time.Second, 50*time.Millisecond, "no connection of ours left open on the server")
	if !assert.Eventually(t, func() bool { return len(ourGoroutines()) <= len(before) }, 5*time.Second, 50*time.Millisecond,
		"no goroutine left: %d of database/sql, the drivers or crl before", len(before)) {
		t.Logf("before:\n%s\n\nafter:\n%s", strings.Join(before, "\n\n"), strings.Join(ourGoroutines(), "\n\n"))
	}
}

// check reads the ledger on the server and holds it to what the client
// saw: every transfer that succeeded is applied once, every transfer that
// failed with a known outcome is not applied, a transfer whose COMMIT
// outcome was unknown is applied whole or not at all, and the balances are
// the sums of the transfers applied.
func check(t *testing.T, raw *sql.DB, l *ledger) {
	t.Helper()
	ctx := context.Background()
	rows, err := raw.QueryContext(ctx, "SELECT id, src, dst, amount FROM "+l.transfersTable)
	require.NoError(t, err)
	applied := map[int64]bool{}
	want := make([]int64, accounts)
	for i := range want {
		want[i] = initial
	}
	for rows.Next() {
		var id, amount int64
		var src, dst int
		require.NoError(t, rows.Scan(&id, &src, &dst, &amount))
		applied[id] = true
		want[src] -= amount
		want[dst] += amount
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())

	var lost, wronglyApplied, unknown int
	for id, err := range l.outcomes {
		switch {
		case err == nil && !applied[id]:
			lost++
			t.Errorf("transfer %d succeeded but is not on the server", id)
		case err != nil && !errors.Is(err, core.ErrCommitUnknown) && applied[id]:
			wronglyApplied++
			t.Errorf("transfer %d failed with a known outcome but is applied: %v", id, err)
		case errors.Is(err, core.ErrCommitUnknown):
			unknown++
		}
	}
	for id := range applied {
		if _, ok := l.outcomes[id]; !ok {
			t.Errorf("transfer %d is on the server but was never run", id)
		}
	}
	var total int64
	for i := range accounts {
		var balance int64
		require.NoError(t, raw.QueryRowContext(ctx, fmt.Sprintf("SELECT balance FROM %s WHERE id = %d", l.accountsTable, i)).Scan(&balance))
		assert.Equal(t, want[i], balance, "account %d: its balance is the sum of the transfers applied (none half-applied)", i)
		total += balance
	}
	assert.Equal(t, int64(accounts*initial), total, "money is neither made nor lost")
	assert.Zero(t, lost, "writes lost")
	assert.Zero(t, wronglyApplied, "failures that were applied")
	t.Logf("%d transfers, %d applied, %d with an unknown COMMIT outcome", len(l.outcomes), len(applied), unknown)
}

// open opens the handle of via on dsn, and returns how to run a transfer
// in a transaction on it (at, when not nil, is called at every point of
// every attempt), how to close it, and its connections in use.
func open(t *testing.T, db database, via, dsn string) (run func(context.Context, *ledger, transfer, func(point)) error, closeHandle func(), inUse func() int) {
	t.Helper()
	switch via {
	case "sqlxcrl":
		h, err := sqlxcrl.Open(db.driver, dsn, sqlxcrl.WithRetryExec(rules))
		require.NoError(t, err)
		run = func(ctx context.Context, l *ledger, tr transfer, at func(point)) error {
			return h.RunInTx(ctx, nil, func(tx *sqlxcrl.Tx) error {
				call(at, attemptBegins)
				for i, s := range tr.statements(l) {
					if i == 1 {
						call(at, midTransaction)
						var balances []int64
						if err := tx.SelectContext(ctx, &balances, "SELECT balance FROM "+l.accountsTable+" ORDER BY id"); err != nil {
							return err
						}
					}
					if _, err := tx.ExecContext(ctx, tx.Rebind(s.query), s.args...); err != nil {
						return err
					}
				}
				call(at, beforeCommit)
				return nil
			})
		}
		return run, func() { require.NoError(t, h.Close()) }, func() int { return h.Stats().InUse }
	case "pgxcrl":
		return openPgx(t, db, dsn)
	case "crl":
		pool, err := crl.Open(db.driver, dsn, crl.WithRetryExec(rules))
		require.NoError(t, err)
		run = func(ctx context.Context, l *ledger, tr transfer, at func(point)) error {
			return crl.RunInTx(ctx, pool, nil, func(tx *sql.Tx) error {
				call(at, attemptBegins)
				for i, s := range tr.statements(l) {
					if i == 1 {
						call(at, midTransaction)
						if err := readAll(ctx, tx, "SELECT balance FROM "+l.accountsTable+" ORDER BY id"); err != nil {
							return err
						}
					}
					if _, err := tx.ExecContext(ctx, rebind(db, s.query), s.args...); err != nil {
						return err
					}
				}
				call(at, beforeCommit)
				return nil
			})
		}
		return run, func() { require.NoError(t, pool.Close()) }, func() int { return pool.Stats().InUse }
	default:
		var d gorm.Dialector = mysql.Open(dsn)
		if db.driver == "pgx" {
			d = postgres.Open(dsn)
		}
		g, err := gorm.Open(gormcrl.Open(d, gormcrl.WithRetryExec(rules)), &gorm.Config{Logger: logger.Discard})
		require.NoError(t, err)
		sqlDB, err := g.DB()
		require.NoError(t, err)
		run = func(ctx context.Context, l *ledger, tr transfer, at func(point)) error {
			return gormcrl.Transaction(g.WithContext(ctx), func(tx *gorm.DB) error {
				call(at, attemptBegins)
				for i, s := range tr.statements(l) {
					if i == 1 {
						call(at, midTransaction)
						var balances []int64
						if err := tx.Raw("SELECT balance FROM " + l.accountsTable + " ORDER BY id").Scan(&balances).Error; err != nil {
							return err
						}
					}
					if err := tx.Exec(s.query, s.args...).Error; err != nil {
						return err
					}
				}
				call(at, beforeCommit)
				return nil
			})
		}
		return run, func() { require.NoError(t, sqlDB.Close()) }, func() int { return sqlDB.Stats().InUse }
	}
}

// openPgx is open for pgxcrl: pgx's own interface over pgxpool, with
// pgxcrl.RunInTx.
func openPgx(t *testing.T, db database, dsn string) (run func(context.Context, *ledger, transfer, func(point)) error, closeHandle func(), inUse func() int) {
	t.Helper()
	pool, err := pgxcrl.Open(context.Background(), dsn, config.WithRetryExec(rules))
	require.NoError(t, err)
	run = func(ctx context.Context, l *ledger, tr transfer, at func(point)) error {
		return pgxcrl.RunInTx(ctx, pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
			call(at, attemptBegins)
			for i, s := range tr.statements(l) {
				if i == 1 {
					call(at, midTransaction)
					rows, err := tx.Query(ctx, "SELECT balance FROM "+l.accountsTable+" ORDER BY id")
					if err != nil {
						return err
					}
					if _, err := pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
						return err
					}
				}
				if _, err := tx.Exec(ctx, rebind(db, s.query), s.args...); err != nil {
					return err
				}
			}
			call(at, beforeCommit)
			return nil
		})
	}
	return run, pool.Close, func() int { return int(pool.Stat().AcquiredConns()) }
}

// readAll reads every row of query in tx, as a caller of database/sql
// does, and returns the query's error or the first met while reading.
func readAll(ctx context.Context, tx *sql.Tx, query string) error {
	rows, err := tx.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var balance int64
		if err := rows.Scan(&balance); err != nil {
			return err
		}
	}
	return rows.Err()
}

// rebind returns query, written with ? placeholders, in db's placeholder
// syntax ($1, $2, … for PostgreSQL).
func rebind(db database, query string) string {
	if db.driver != "pgx" {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// point is a point of a transfer's transaction attempt where a fault may
// be injected or healed.
type point int

const (
	attemptBegins  point = iota // the closure starts (again, when retried)
	midTransaction              // after the INSERT, before the read of every balance
	beforeCommit                // the closure returns: the adapter commits next
)

// call calls at with p, when at is not nil.
func call(at func(point), p point) {
	if at != nil {
		at(p)
	}
}

type statement struct {
	query string
	args  []any
}

// statements are a transfer's: its row (the primary key makes a second
// application fail, so a duplicate cannot pass unseen) and the two
// balances.
func (tr transfer) statements(l *ledger) []statement {
	return []statement{
		{"INSERT INTO " + l.transfersTable + " (id, src, dst, amount) VALUES (?, ?, ?, ?)", []any{tr.id, tr.from, tr.to, tr.amt}},
		{"UPDATE " + l.accountsTable + " SET balance = balance - ? WHERE id = ?", []any{tr.amt, tr.from}},
		{"UPDATE " + l.accountsTable + " SET balance = balance + ? WHERE id = ?", []any{tr.amt, tr.to}},
	}
}

// startProxy starts a toxiproxy proxy, in process, to the server of dsn.
func startProxy(t *testing.T, db database, dsn string) *toxiproxy.Proxy {
	t.Helper()
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(server, "faults", "127.0.0.1:0", serverAddr(t, db, dsn))
	require.NoError(t, p.Start())
	t.Cleanup(p.Stop)
	return p
}

func serverAddr(t *testing.T, db database, dsn string) string {
	t.Helper()
	if db.driver == "mysql" {
		cfg, err := mysqldriver.ParseDSN(dsn)
		require.NoError(t, err)
		return cfg.Addr
	}
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	return u.Host
}

// proxiedDSN is dsn with the server's address replaced by addr.
func proxiedDSN(t *testing.T, db database, dsn, addr string) string {
	t.Helper()
	if db.driver == "mysql" {
		cfg, err := mysqldriver.ParseDSN(dsn)
		require.NoError(t, err)
		cfg.Addr = addr
		return cfg.FormatDSN()
	}
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	u.Host = addr
	return u.String()
}

// identify returns the DSN the workload connects with, named so that the
// server tells its connections from everyone else's, and a count of them.
func identify(t *testing.T, raw *sql.DB, db database, dsn, tag string) (string, func() int) {
	t.Helper()
	ctx := context.Background()
	count := func(query string, args ...any) func() int {
		return func() int {
			var n int
			if err := raw.QueryRowContext(ctx, query, args...).Scan(&n); err != nil {
				t.Logf("count connections: %v", err)
				return -1
			}
			return n
		}
	}
	if db.driver == "pgx" {
		u, err := url.Parse(dsn)
		require.NoError(t, err)
		q := u.Query()
		q.Set("application_name", tag)
		u.RawQuery = q.Encode()
		return u.String(), count("SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = $1", tag)
	}
	cfg, err := mysqldriver.ParseDSN(dsn)
	require.NoError(t, err)
	user := tag
	if len(user) > 32 { // MariaDB's user names are at most 80 characters, MySQL's 32
		user = user[:32]
	}
	for _, s := range []string{
		fmt.Sprintf("CREATE USER '%s'@'%%'", user),
		fmt.Sprintf("GRANT ALL ON `%s`.* TO '%s'@'%%'", cfg.DBName, user),
	} {
		_, err := raw.ExecContext(ctx, s)
		require.NoError(t, err, s)
	}
	t.Cleanup(func() {
		_, err := raw.ExecContext(ctx, fmt.Sprintf("DROP USER IF EXISTS '%s'@'%%'", user))
		assert.NoError(t, err, "drop the workload's user")
	})
	cfg.User, cfg.Passwd = user, ""
	return cfg.FormatDSN(), count("SELECT COUNT(*) FROM information_schema.processlist WHERE user = ?", user)
}

// ourGoroutines returns the stacks of the goroutines of database/sql,
// the drivers and crl: those a leak would leave (the test's own and the
// runtime's are not counted).
func ourGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var ours []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "testing.tRunner") || strings.Contains(g, "crl-go/crl/faults.") {
			continue // the test's own, which run the workload and this count
		}
		// toxiproxy's own are not counted: a link's stub may stay blocked
		// after a toxic is removed from a closing link (a leak of
		// toxiproxy's, not of the code under test; the server's count of
		// open connections shows that no connection stays behind it).
		for _, mark := range []string{"database/sql.", "go-sql-driver/mysql", "jackc/pgx", "crl-go/crl"} {
			if strings.Contains(g, mark) {
				ours = append(ours, g)
				break
			}
		}
	}
	return ours
}
