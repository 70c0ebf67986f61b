package benchmarks

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

var mariaPlot = flag.String("storm.mariadb.plot", "", "write BenchmarkStormMariaDB's plots (PNG) to this path prefix: prefix-amplification.png, prefix-pool.png, prefix-threads.png")

// The real-server storm, scaled to run in about 16 s per policy: a
// statement holds one server-side named lock for its service time (80 ms:
// a capacity of 12.5 statements/s), clients offer 10 requests/s through a
// pool of 30 connections and give up on an attempt after 500 ms; for 5 s
// the service time doubles (6.25 statements/s). Every statement first
// calls a stored function that counts it, so the executions are counted by
// the server at arrival, whether or not the client is still waiting: a
// client that gives up closes its connection (go-sql-driver/mysql), and
// MariaDB keeps running the statement, as in the post-mortem. (The
// function inserts a row with a UUID_SHORT() key into an InnoDB table: a
// counter row, a MEMORY table or an AUTO_INCREMENT key would be locked for
// the whole statement, since the tables of a stored function are locked
// when the statement starts, and would serialise the statements on the
// counter.) A statement waits at most 1.5 s for the lock, which bounds the
// server threads that abandoned statements hold (the server is shared
// with other tests).
const (
	mariaRate       = 10.0
	mariaService    = 80 * time.Millisecond
	mariaDegradeAt  = 2 * time.Second
	mariaDegradeFor = 5 * time.Second
	mariaObserve    = 6 * time.Second // after the capacity returns
	mariaTimeout    = 500 * time.Millisecond
	mariaLockWait   = "1.5" // seconds a statement waits for the lock
	mariaPool       = 30
	mariaSampleGap  = 250 * time.Millisecond // how often the pool, the server's threads and its CPU are read
	mariaBucket     = time.Second            // width of a plotted bucket
	mariaRounds     = 3                      // rounds of every policy with CRL_STORM_FULL=1
)

// mariaDriverLayer is the prefix of the rows whose statements run
// through crl.Open's driver layer, their waits on the connection the
// statement was given. Every other row runs its loop around db.ExecContext
// on a plain pool, as sqlxcrl does over a *sql.DB crl did not open: the
// connection goes back to the pool during a wait.
const mariaDriverLayer = "crl.Open"

// mariaPolicies are the rows of the post-mortem's table, scaled to the
// benchmark's 500 ms client time-out, beside crl's: each retries a
// time-out up to 3 times (immediately: "0+0", see StormPolicies), and
// the JDBC schedule with and without crl's budget through the driver
// layer. Without full, the smoke run of CI: no retry, the JDBC schedule
// without a budget, crl's default, and crl's default through the driver
// layer.
func mariaPolicies(full bool) []RetryPolicy {
	all := []RetryPolicy{
		{Name: "no retry"},
		{Name: "immediate retries", Rules: "{timeout:3,0+0}"},
		{Name: "fixed interval", Rules: "{timeout:3,50ms+0}"},
		{Name: "exponential backoff", Rules: "{timeout:3,50ms*2}"},
		{Name: "exponential + full jitter + budget", Rules: "{timeout:3,50ms*2}", Jitter: core.JitterFull, Budget: true},
		{Name: "JDBC CRL, no budget", Rules: "{timeout:3,125ms*2}"},
		{Name: "crl default", Rules: "{timeout:3,125ms*2}", Budget: true},
		{Name: mariaDriverLayer + " (database/sql)", Rules: "{timeout:3,125ms*2}", Budget: true},
		{Name: mariaDriverLayer + ", no budget", Rules: "{timeout:3,125ms*2}"},
	}
	if full {
		return all
	}
	return []RetryPolicy{all[0], all[5], all[6], all[7]}
}

// mariaClient is the clients' side of one run: the pool, and how a request
// runs its statement under the policy.
type mariaClient struct {
	db *sql.DB
	// exec runs one request's statement with its retries.
	exec func(ctx context.Context, stmt string, sleep float64) error
	// lastTimeout is when an attempt last timed out (Unix nanoseconds).
	lastTimeout *atomic.Int64
}

// openMariaClient opens the pool of one run of p against dsn: through
// crl.Open for the rows named mariaDriverLayer…, else a plain pool whose
// requests run under p's Retrier. Every attempt is bounded by
// mariaTimeout.
func openMariaClient(p RetryPolicy, dsn string) (*mariaClient, error) {
	c := &mariaClient{lastTimeout: new(atomic.Int64)}
	if strings.HasPrefix(p.Name, mariaDriverLayer) {
		opts := []crl.Option{crl.WithRetryExec(p.Rules), config.WithQueryTimeout(mariaTimeout),
			config.WithJitter(p.Jitter), config.WithObserver(timeoutObserver{last: c.lastTimeout})}
		if !p.Budget {
			opts = append(opts, config.WithoutRetryBudget())
		} else if p.BudgetSettings != (core.BudgetSettings{}) {
			opts = append(opts, config.WithRetryBudget(p.BudgetSettings))
		}
		if p.Breaker != (core.BreakerSettings{}) {
			opts = append(opts, config.WithCircuitBreaker(p.Breaker))
		}
		db, err := crl.Open("mysql", dsn, opts...)
		if err != nil {
			return nil, fmt.Errorf("policy %s: %w", p.Name, err)
		}
		c.db = db
		c.exec = func(ctx context.Context, stmt string, sleep float64) error {
			_, err := db.ExecContext(ctx, stmt, sleep)
			return err
		}
	} else {
		r, err := p.retrier(core.Policy{QueryTimeout: mariaTimeout}, core.Options{})
		if err != nil {
			return nil, err
		}
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			return nil, err
		}
		c.db = db
		c.exec = func(ctx context.Context, stmt string, sleep float64) error {
			return r.Do(ctx, stmt, func(actx context.Context) error {
				_, err := db.ExecContext(actx, stmt, sleep)
				if err != nil && actx.Err() != nil {
					c.lastTimeout.Store(time.Now().UnixNano())
				}
				return err
			})
		}
	}
	c.db.SetMaxOpenConns(mariaPool)
	c.db.SetMaxIdleConns(mariaPool)
	return c, nil
}

// timeoutObserver notes when an attempt of the driver layer's statement
// loop timed out: the loop runs inside the pool, so its events are where
// the attempts are seen.
type timeoutObserver struct {
	core.NopObserver
	last *atomic.Int64
}

func (o timeoutObserver) note(err error) {
	if errors.Is(err, context.DeadlineExceeded) {
		o.last.Store(time.Now().UnixNano())
	}
}

func (o timeoutObserver) RetryScheduled(e core.RetryScheduled) { o.note(e.Err) }
func (o timeoutObserver) GaveUp(e core.GaveUp)                 { o.note(e.Err) }

// mariaSample is one reading taken during a run.
type mariaSample struct {
	at       time.Duration // since the run started
	executed int           // statements the server counted since the run started; -1 when the count failed
	inUse    int           // the pool's connections in use (sql.DBStats.InUse)
	running  int           // this run's statements on the server (PROCESSLIST); -1 when the query failed
	cpuTicks int64         // mariadbd's user + system CPU in clock ticks; -1 when unknown
}

type mariaResult struct {
	policy                  string
	round                   int
	requests, executions    int // while degraded
	allRequests, allExecute int
	failed                  int
	// recovery is the time from the capacity's return to the last attempt
	// that timed out; recovered is false when an attempt still timed out
	// in the last second of arrivals.
	recovery  time.Duration
	recovered bool
	arrivals  []time.Duration
	samples   []mariaSample
}

func (r mariaResult) amplification() float64 {
	return float64(r.executions) / float64(max(r.requests, 1))
}

// peakPool is the most connections in use ÷ the pool's maximum.
func (r mariaResult) peakPool() float64 {
	peak := 0
	for _, s := range r.samples {
		peak = max(peak, s.inUse)
	}
	return float64(peak) / mariaPool
}

// peakRunning is the most statements of the run the server ran at once.
func (r mariaResult) peakRunning() int {
	peak := 0
	for _, s := range r.samples {
		peak = max(peak, s.running)
	}
	return peak
}

// peakCPU is mariadbd's highest CPU use over one second, in % of one core
// (-1 when unknown): readings a second apart, so that the clock ticks'
// granularity (10 ms) stays small.
func (r mariaResult) peakCPU() float64 {
	peak := -1.0
	for i, s := range r.samples {
		for j := i + 1; j < len(r.samples); j++ {
			e := r.samples[j]
			if d := e.at - s.at; d >= time.Second {
				if s.cpuTicks >= 0 && e.cpuTicks >= 0 {
					peak = max(peak, float64(e.cpuTicks-s.cpuTicks)/clockTicks/d.Seconds()*100)
				}
				break
			}
		}
	}
	return peak
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat's CPU
// times: 100 on every Linux architecture Go runs on.
const clockTicks = 100

// series returns, per mariaBucket, the server's executions per request
// arriving in the bucket, the peak pool occupancy and the peak of the
// run's statements on the server.
func (r mariaResult) series() (amplification, pool, running []float64) {
	n := int((mariaDegradeAt + mariaDegradeFor + mariaObserve) / mariaBucket)
	amplification, pool, running = make([]float64, n), make([]float64, n), make([]float64, n)
	executedAt := func(t time.Duration) int { // the count of the sample nearest t
		best, bestD := 0, time.Duration(1<<62)
		for _, s := range r.samples {
			if d := max(s.at-t, t-s.at); s.executed >= 0 && d < bestD {
				best, bestD = s.executed, d
			}
		}
		return best
	}
	for i := range n {
		from, to := time.Duration(i)*mariaBucket, time.Duration(i+1)*mariaBucket
		requests := 0
		for _, a := range r.arrivals {
			if a >= from && a < to {
				requests++
			}
		}
		amplification[i] = float64(executedAt(to)-executedAt(from)) / float64(max(requests, 1))
		for _, s := range r.samples {
			if s.at >= from && s.at < to {
				pool[i] = max(pool[i], float64(s.inUse)/mariaPool)
				running[i] = max(running[i], float64(s.running))
			}
		}
	}
	return amplification, pool, running
}

// mariaServer is the benchmark's view of the server: its table and stored
// function (named storm_<suffix>), the connection that counts, and
// mariadbd's process when it runs on this machine.
type mariaServer struct {
	admin   *sql.DB
	counter *sql.Conn
	table   string
	fn      string
	cpuStat string // /proc/<pid>/stat of mariadbd; "" when not on this machine
}

// count is how many statements the server has counted so far.
func (m *mariaServer) count(ctx context.Context) (int, error) {
	var n int
	if err := m.counter.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+m.table).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting the executions: %w", err)
	}
	return n, nil
}

// running is how many statements that hold or wait for lock the server
// runs now.
func (m *mariaServer) running(ctx context.Context, lock string) (int, error) {
	var n int
	err := m.admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE ?",
		"DO "+m.fn+"(), IF(GET_LOCK('"+lock+"'%").Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("reading the process list: %w", err)
	}
	return n, nil
}

// cpuTicks reads mariadbd's user and system CPU time, in clock ticks (-1
// when unknown).
func (m *mariaServer) cpuTicks() int64 {
	if m.cpuStat == "" {
		return -1
	}
	b, err := os.ReadFile(m.cpuStat)
	if err != nil {
		return -1
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state is field 3, utime 14 and stime 15.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return -1
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return u + st
}

// findServerProcess returns /proc/<pid>/stat of the server behind admin
// when its pid file is readable here (the server runs on this machine),
// else "".
func findServerProcess(ctx context.Context, admin *sql.DB) string {
	var pidFile string
	if err := admin.QueryRowContext(ctx, "SELECT @@pid_file").Scan(&pidFile); err != nil {
		return ""
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return ""
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return ""
	}
	stat := fmt.Sprintf("/proc/%d/stat", pid)
	if _, err := os.Stat(stat); err != nil {
		return ""
	}
	return stat
}

// settle waits until no statement of the benchmark runs on the server any
// more (the ones the clients gave up on end within the lock wait), at most
// 10 s.
func (m *mariaServer) settle(ctx context.Context) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		var n int
		err := m.admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE ?",
			"DO "+m.fn+"()%").Scan(&n)
		if err != nil || n == 0 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// BenchmarkStormMariaDB runs the storm against the MariaDB of
// CRL_MYSQL_DSN and measures the post-mortem's four columns per policy:
// the executions per request the server counted while degraded, mariadbd's
// CPU at peak (from /proc, when the server runs on this machine) beside
// the server's own count of the benchmark's running statements at peak
// (information_schema.PROCESSLIST), the pool's occupancy at peak
// (sql.DBStats.InUse ÷ max open) and the time to recover after the
// capacity returns. The rows named "crl.Open …" run their statements
// through crl's driver layer, which waits for a retry on the statement's
// connection, so their pool column counts the waits too; the other rows
// run their loop around the pool. With CRL_STORM_FULL=1 it runs every row
// of the post-mortem's table and the driver layer's (mariaPolicies) in 3
// rounds, each round every policy one after another in a rotated order,
// and reports the median and the range of each column (about 7 minutes);
// without it, one round of no retry, the JDBC schedule, crl's default and
// crl's default through the driver layer (about a minute), the smoke run
// of CI. -storm.mariadb.plot=prefix draws the series over time.
func BenchmarkStormMariaDB(b *testing.B) {
	dsn := os.Getenv("CRL_MYSQL_DSN")
	if dsn == "" {
		b.Skip("CRL_MYSQL_DSN is not set")
	}
	full := os.Getenv("CRL_STORM_FULL") == "1"
	rounds := 1
	if full {
		rounds = mariaRounds
	}
	policies := mariaPolicies(full)
	ctx := context.Background()
	admin, err := sql.Open("mysql", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close()
	sfx := fmt.Sprintf("%d_%d", time.Now().UnixNano()%1_000_000_000, rand.IntN(1_000_000))
	m := &mariaServer{admin: admin, table: "storm_" + sfx, fn: "storm_arrive_" + sfx, cpuStat: findServerProcess(ctx, admin)}
	for _, q := range []string{
		"CREATE TABLE " + m.table + " (id BIGINT UNSIGNED PRIMARY KEY) ENGINE=InnoDB",
		"CREATE FUNCTION " + m.fn + "() RETURNS INT MODIFIES SQL DATA BEGIN INSERT INTO " + m.table + " VALUES (UUID_SHORT()); RETURN 0; END",
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
	defer func() {
		_, _ = admin.ExecContext(ctx, "DROP FUNCTION IF EXISTS "+m.fn)
		_, _ = admin.ExecContext(ctx, "DROP TABLE IF EXISTS "+m.table)
	}()
	// The count reads uncommitted rows: a statement's row exists from its
	// arrival, and is committed only when the statement ends.
	if m.counter, err = admin.Conn(ctx); err != nil {
		b.Fatal(err)
	}
	defer m.counter.Close()
	if _, err := m.counter.ExecContext(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL READ UNCOMMITTED"); err != nil {
		b.Fatal(err)
	}

	started := time.Now()
	var results []mariaResult
	for round := range rounds {
		// Rotate the order, so that no policy always runs first or after
		// the same one.
		for i := range policies {
			p := policies[(i+round)%len(policies)]
			client, err := openMariaClient(p, dsn)
			if err != nil {
				b.Fatal(err)
			}
			lock := fmt.Sprintf("storm_%s_%d_%d", sfx, round, i)
			res, err := runMariaStorm(ctx, m, client, lock)
			client.db.Close()
			if err != nil {
				b.Fatalf("%s, round %d: %v", p.Name, round+1, err)
			}
			res.policy, res.round = p.Name, round+1
			results = append(results, res)
			m.settle(ctx)
		}
	}
	b.Logf("%d rounds of %d policies in %v", rounds, len(policies), time.Since(started).Round(time.Second))

	rows := summariseMaria(policies, results)
	for _, row := range rows {
		b.Run(strings.ReplaceAll(row.policy, " ", "_"), func(b *testing.B) {
			for b.Loop() {
			}
			b.ReportMetric(row.amplification.median, "executions/request")
			b.ReportMetric(row.pool.median, "peak-pool")
			b.ReportMetric(row.running.median, "peak-server-threads")
			b.ReportMetric(row.cpu.median, "peak-cpu-%")
			b.ReportMetric(row.recovery.median, "recovery-s")
		})
	}
	var table strings.Builder
	fmt.Fprintf(&table, "\n%d round(s); median [min–max]\n\n", rounds)
	table.WriteString("| policy | rule | load amplification (executions/request while degraded, server count) | mariadbd CPU at peak (% of a core, /proc) | the run's statements on the server, peak (PROCESSLIST) | pool occupancy, peak (in use ÷ 30) | self-healing (recovery after the capacity returns) | failed requests |\n|---|---|---|---|---|---|---|---|\n")
	for _, row := range rows {
		fmt.Fprintf(&table, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", row.policy, row.rule,
			row.amplification.format("%.2f", "×"), row.cpu.format("%.0f", " %"), row.running.format("%.0f", ""),
			row.pool.format("%.2f", ""), row.recovery.format("%.1f", " s")+row.unrecovered(), row.failed.format("%.0f", ""))
	}
	table.WriteString("\nEvery run:\n\n| round | policy | executions/request while degraded (server count) | whole run | failed requests | CPU peak | statements peak | pool peak | recovery |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, res := range results {
		rec := fmt.Sprintf("%.1f s", res.recovery.Seconds())
		if !res.recovered {
			rec = "≥ " + rec + " (not recovered)"
		}
		fmt.Fprintf(&table, "| %d | %s | %.2f (%d / %d) | %.2f | %d of %d | %.0f %% | %d | %.2f | %s |\n", res.round, res.policy,
			res.amplification(), res.executions, res.requests, float64(res.allExecute)/float64(max(res.allRequests, 1)),
			res.failed, res.allRequests, res.peakCPU(), res.peakRunning(), res.peakPool(), rec)
	}
	b.Log(table.String())
	if *mariaPlot != "" {
		if err := plotMaria(policies, results, rounds, *mariaPlot); err != nil {
			b.Fatal(err)
		}
	}
}

// spread is a column's median and range over the rounds.
type spread struct{ median, low, high float64 }

func spreadOf(v []float64) spread {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return spread{med, s[0], s[n-1]}
}

// format writes the median and, when the rounds differ, the range.
func (s spread) format(verb, unit string) string {
	if s.median < 0 {
		return "n/a"
	}
	m := fmt.Sprintf(verb, s.median) + unit
	lo, hi := fmt.Sprintf(verb, s.low), fmt.Sprintf(verb, s.high)
	if lo == hi {
		return m
	}
	return m + " [" + lo + "–" + hi + "]"
}

type mariaRow struct {
	policy, rule                                string
	amplification, cpu, running, pool, recovery spread
	failed                                      spread
	rounds, notRecovered                        int
}

// unrecovered says in how many rounds the policy had not recovered.
func (r mariaRow) unrecovered() string {
	if r.notRecovered == 0 {
		return ""
	}
	return fmt.Sprintf(", not recovered in %d of %d", r.notRecovered, r.rounds)
}

// summariseMaria is one row per policy, in the order of policies.
func summariseMaria(policies []RetryPolicy, results []mariaResult) []mariaRow {
	var rows []mariaRow
	for _, p := range policies {
		var amp, cpu, running, pool, rec, failed []float64
		row := mariaRow{policy: p.Name, rule: "`" + p.Rules + "`"}
		if p.Rules == "" {
			row.rule = "no rule"
		}
		if p.Budget {
			row.rule += " + budget"
		}
		if p.Jitter == core.JitterFull {
			row.rule += ", jitter=full"
		}
		for _, res := range results {
			if res.policy != p.Name {
				continue
			}
			row.rounds++
			if !res.recovered {
				row.notRecovered++
			}
			amp = append(amp, res.amplification())
			cpu = append(cpu, res.peakCPU())
			running = append(running, float64(res.peakRunning()))
			pool = append(pool, res.peakPool())
			rec = append(rec, res.recovery.Seconds())
			failed = append(failed, float64(res.failed))
		}
		row.amplification, row.cpu, row.running, row.pool, row.recovery, row.failed =
			spreadOf(amp), spreadOf(cpu), spreadOf(running), spreadOf(pool), spreadOf(rec), spreadOf(failed)
		rows = append(rows, row)
	}
	return rows
}

// plotMaria draws, per policy, the median over the rounds of each bucket:
// executions per request, pool occupancy and the run's statements on the
// server.
func plotMaria(policies []RetryPolicy, results []mariaResult, rounds int, prefix string) error {
	var amp, pool, running []Series
	for _, p := range policies {
		var a, o, r [][]float64
		for _, res := range results {
			if res.policy == p.Name {
				x, y, z := res.series()
				a, o, r = append(a, x), append(o, y), append(r, z)
			}
		}
		amp = append(amp, Series{Name: p.Name, Values: medianSeries(a), Bold: p.Budget})
		pool = append(pool, Series{Name: p.Name, Values: medianSeries(o), Bold: p.Budget})
		running = append(running, Series{Name: p.Name, Values: medianSeries(r), Bold: p.Budget})
	}
	how := fmt.Sprintf("MariaDB, capacity 12.5 → 6.25 statements/s from %v to %v; 10 requests/s; median of %d round(s)",
		mariaDegradeAt, mariaDegradeAt+mariaDegradeFor, rounds)
	marks := []time.Duration{mariaDegradeAt, mariaDegradeAt + mariaDegradeFor}
	for _, f := range []struct {
		suffix, yLabel string
		lines          []Series
	}{
		{"-amplification.png", "executions per request (server count, per second)", amp},
		{"-pool.png", "pool occupancy, peak per second (in use ÷ 30)", pool},
		{"-threads.png", "the run's statements on the server, peak per second", running},
	} {
		if err := PlotSeries(how, f.yLabel, mariaBucket, marks, f.lines, prefix+f.suffix); err != nil {
			return fmt.Errorf("plot %s: %w", prefix+f.suffix, err)
		}
	}
	return nil
}

// medianSeries is the median of each bucket over the runs.
func medianSeries(runs [][]float64) []float64 {
	if len(runs) == 0 {
		return nil
	}
	out := make([]float64, len(runs[0]))
	for i := range out {
		v := make([]float64, len(runs))
		for j, r := range runs {
			v[j] = r[i]
		}
		out[i] = spreadOf(v).median
	}
	return out
}

// runMariaStorm offers mariaRate requests/s for the whole scenario, reads
// the pool, the server's threads and its CPU every mariaSampleGap, and
// waits for the last request.
func runMariaStorm(ctx context.Context, m *mariaServer, client *mariaClient, lock string) (mariaResult, error) {
	var (
		res     mariaResult
		service atomic.Int64
		failed  atomic.Int64
		wg      sync.WaitGroup
		db      = client.db
	)
	stmt := "DO " + m.fn + "(), IF(GET_LOCK('" + lock + "', " + mariaLockWait + "), SLEEP(?) + RELEASE_LOCK('" + lock + "'), 0)"
	service.Store(int64(mariaService))
	before, err := m.count(ctx)
	if err != nil {
		return res, err
	}
	start := time.Now()
	end := mariaDegradeAt + mariaDegradeFor

	// The sampler runs beside the requests, so that a slow reading under
	// load does not change their pace.
	stop := make(chan struct{})
	sampled := make(chan []mariaSample)
	go func() {
		var samples []mariaSample
		tick := time.NewTicker(mariaSampleGap)
		defer tick.Stop()
		for {
			s := mariaSample{at: time.Since(start), inUse: db.Stats().InUse, cpuTicks: m.cpuTicks(), executed: -1, running: -1}
			if n, err := m.count(ctx); err == nil {
				s.executed = n - before
			}
			if n, err := m.running(ctx, lock); err == nil {
				s.running = n
			}
			samples = append(samples, s)
			select {
			case <-tick.C:
			case <-stop:
				sampled <- samples
				return
			}
		}
	}()

	tick := time.NewTicker(time.Duration(float64(time.Second) / mariaRate))
	defer tick.Stop()
	for now := range tick.C {
		t := now.Sub(start)
		if t >= end+mariaObserve {
			break
		}
		switch {
		case t >= end:
			service.Store(int64(mariaService))
		case t >= mariaDegradeAt:
			service.Store(int64(2 * mariaService))
		}
		res.allRequests++
		res.arrivals = append(res.arrivals, t)
		if t >= mariaDegradeAt && t < end {
			res.requests++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := client.exec(ctx, stmt, time.Duration(service.Load()).Seconds()); err != nil {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	close(stop)
	res.samples = <-sampled
	after, err := m.count(ctx)
	if err != nil {
		return res, err
	}
	res.allExecute = after - before
	// The degraded window's executions, from the readings nearest its
	// ends.
	var atDegrade, atRestore *mariaSample
	for i := range res.samples {
		s := &res.samples[i]
		if s.executed < 0 {
			continue
		}
		if atDegrade == nil || absDuration(s.at-mariaDegradeAt) < absDuration(atDegrade.at-mariaDegradeAt) {
			atDegrade = s
		}
		if atRestore == nil || absDuration(s.at-end) < absDuration(atRestore.at-end) {
			atRestore = s
		}
	}
	if atDegrade == nil {
		return res, errors.New("no reading of the server's count succeeded")
	}
	res.executions = atRestore.executed - atDegrade.executed
	res.failed = int(failed.Load())
	var last time.Duration
	if at := client.lastTimeout.Load(); at != 0 {
		last = time.Unix(0, at).Sub(start)
	}
	res.recovery = max(last-end, 0)
	res.recovered = last < end+mariaObserve-time.Second
	return res, nil
}

func absDuration(d time.Duration) time.Duration { return max(d, -d) }
