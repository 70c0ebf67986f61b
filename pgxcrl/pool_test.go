package pgxcrl_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/pgxcrl"
)

// sqlState returns the SQLSTATE of err's *pgconn.PgError, "" without one.
func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func TestOpenBadInput(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ dsn, names string }{
		{"postgres://app:s3cret@127.0.0.1:5432/test?retryExec={40P01:x,1}", "retryExec"},
		{"postgres://app:s3cret@127.0.0.1:5432/test?retryExce={40P01:3,1}", "retryExce"},
		{"host=127.0.0.1 user=app password=s3cret connectRetryCount=999", "connectRetryCount"},
		{"postgres://app:s3cret@127.0.0.1:notaport/test", "notaport"},
	} {
		p, err := pgxcrl.Open(ctx, tc.dsn)
		require.Error(t, err, tc.dsn)
		assert.Nil(t, p)
		assert.Contains(t, err.Error(), tc.names)
		assert.NotContains(t, err.Error(), "s3cret")
	}
}

func TestWrapNil(t *testing.T) {
	p, err := pgxcrl.Wrap(nil)
	require.Error(t, err)
	assert.Nil(t, p)
	assert.Contains(t, err.Error(), "nil")
}

func TestOpenKeepsPgxKeys(t *testing.T) {
	p, err := pgxcrl.Open(context.Background(),
		"postgres://app@127.0.0.1:5432/test?application_name=billing&retryExec={40P01:2,10ms}&pool_max_conns=3")
	require.NoError(t, err)
	defer p.Close()
	cfg := p.Config()
	assert.Equal(t, int32(3), cfg.MaxConns)
	assert.Equal(t, "billing", cfg.ConnConfig.RuntimeParams["application_name"])
	_, ok := cfg.ConnConfig.RuntimeParams["retryExec"]
	assert.False(t, ok, "crl's keys do not reach pgx")
	_, ok = p.Runtime().Retrier().Policy().Statement.Lookup(0)
	assert.False(t, ok)
	assert.Equal(t, "{40P01:2,10ms}", p.Runtime().Config().RetryExec)
	assert.Equal(t, "postgres", p.Runtime().DriverFamily())
}

func TestExecRetriesInjectedErrors(t *testing.T) {
	a := admin(t)
	for _, code := range []string{"40P01", "40001"} {
		t.Run(code, func(t *testing.T) {
			f := newFault(t, a)
			tbl := table(t, a, "exec", "v int")
			clock := coretest.NewClock(time.Time{})
			obs := &coretest.Observer{}
			p := open(t, "", config.WithRetryExec("{40P01,40001:3,10ms*2}"), config.WithClock(clock), config.WithObserver(obs))
			tag, err := p.Exec(context.Background(), "INSERT INTO "+tbl+" SELECT "+f.call(code, 2))
			require.NoError(t, err)
			assert.Equal(t, int64(1), tag.RowsAffected())
			assert.Equal(t, int64(3), f.calls(t), "executions on the server")
			assert.Equal(t, int64(1), count(t, a, "SELECT count(*) FROM "+tbl), "one row: the failed attempts wrote nothing")
			assert.Equal(t, []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}, clock.Sleeps())
			assert.Len(t, obs.Snapshot().Retries, 2)
		})
	}
}

func TestExecGivesUpWithTheServersError(t *testing.T) {
	a := admin(t)
	f := newFault(t, a)
	clock := coretest.NewClock(time.Time{})
	p := open(t, "retryExec={40P01:2,10ms}", config.WithClock(clock))
	_, err := p.Exec(context.Background(), "SELECT "+f.call("40P01", 10))
	require.Error(t, err)
	assert.ErrorIs(t, err, core.ErrRetriesExhausted)
	assert.Equal(t, "40P01", sqlState(err), "the driver's own *pgconn.PgError")
	assert.Equal(t, int64(3), f.calls(t))
}

func TestExecFilterMismatchRunsOnce(t *testing.T) {
	a := admin(t)
	f := newFault(t, a)
	p := open(t, "", config.WithRetryExec("{40P01:3,10ms:update}"), config.WithClock(coretest.NewClock(time.Time{})))
	_, err := p.Exec(context.Background(), "SELECT "+f.call("40P01", 1))
	var pe *pgconn.PgError
	require.ErrorAs(t, err, &pe)
	assert.Same(t, pe, err, "an error no rule retries comes back as pgx's own value")
	assert.Equal(t, int64(1), f.calls(t))
}

func TestExecWithoutRetry(t *testing.T) {
	a := admin(t)
	f := newFault(t, a)
	p := open(t, "retryExec={40P01:3,10ms}", config.WithClock(coretest.NewClock(time.Time{})))
	_, err := p.Exec(crl.WithoutRetry(context.Background()), "SELECT "+f.call("40P01", 1))
	assert.Equal(t, "40P01", sqlState(err))
	assert.Equal(t, int64(1), f.calls(t))
}

func TestQueryRetriesBeforeTheFirstRow(t *testing.T) {
	a := admin(t)
	f := newFault(t, a)
	p := open(t, "retryExec={40001:3,10ms}", config.WithClock(coretest.NewClock(time.Time{})))
	rows, err := p.Query(context.Background(),
		"WITH x AS MATERIALIZED (SELECT "+f.call("40001", 2)+" AS v) SELECT v + g FROM x, generate_series(0, 2) g ORDER BY g")
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	require.NoError(t, err)
	assert.Equal(t, []int32{1, 2, 3}, got)
	assert.Equal(t, int64(3), f.calls(t))
	assert.Equal(t, int32(0), p.Stat().AcquiredConns(), "the rows gave their connection back")
}

func TestQueryEmptyResult(t *testing.T) {
	p := open(t, "")
	rows, err := p.Query(context.Background(), "SELECT 1 WHERE false")
	require.NoError(t, err)
	assert.False(t, rows.Next())
	require.NoError(t, rows.Err())
	assert.Equal(t, "SELECT 0", rows.CommandTag().String())
	assert.Equal(t, int32(0), p.Stat().AcquiredConns())
}

func TestQueryErrorAfterTheFirstRowIsNotRetried(t *testing.T) {
	a := admin(t)
	f := newFault(t, a)
	obs := &coretest.Observer{}
	p := open(t, "retryExec={40P01:3,10ms}", config.WithClock(coretest.NewClock(time.Time{})), config.WithObserver(obs))
	rows, err := p.Query(context.Background(),
		"SELECT g, CASE WHEN g = 3 THEN "+f.call("40P01", 100)+" ELSE 0 END FROM generate_series(1, 3) g")
	require.NoError(t, err)
	var seen []int32
	for rows.Next() {
		var g, x int32
		require.NoError(t, rows.Scan(&g, &x))
		seen = append(seen, g)
	}
	assert.Equal(t, "40P01", sqlState(rows.Err()))
	assert.Equal(t, []int32{1, 2}, seen)
	assert.Equal(t, int64(1), f.calls(t), "never re-run")
	ev := obs.Snapshot()
	require.Len(t, ev.GiveUps, 1)
	assert.ErrorIs(t, ev.GiveUps[0].Reason, core.ErrAfterFirstRow)
	assert.Empty(t, ev.Retries)
	assert.Equal(t, int32(0), p.Stat().AcquiredConns())
}

func TestQueryRowRetries(t *testing.T) {
	a := admin(t)
	f := newFault(t, a)
	p := open(t, "retryExec={40P01:3,10ms}", config.WithClock(coretest.NewClock(time.Time{})))
	var v int
	require.NoError(t, p.QueryRow(context.Background(), "SELECT "+f.call("40P01", 2)).Scan(&v))
	assert.Equal(t, 1, v)
	assert.Equal(t, int64(3), f.calls(t))
	assert.ErrorIs(t, p.QueryRow(context.Background(), "SELECT 1 WHERE false").Scan(&v), pgx.ErrNoRows)
	assert.Equal(t, int32(0), p.Stat().AcquiredConns())
}

func TestExecutionCutoffIsRetried(t *testing.T) {
	a := admin(t)
	f := newFault(t, a)
	p := open(t, "retryExec={timeout:2,10ms}", config.WithExecutionCutoff(200*time.Millisecond),
		config.WithClock(coretest.NewClock(time.Time{})))
	var st string
	require.NoError(t, p.QueryRow(context.Background(), "SHOW statement_timeout").Scan(&st))
	assert.Equal(t, "200ms", st)
	var v int
	require.NoError(t, p.QueryRow(context.Background(), "SELECT "+f.call("57014", 1)).Scan(&v))
	assert.Equal(t, int64(2), f.calls(t), "the cut-off (57014) before the first row, retried")
}

func TestWrap(t *testing.T) {
	a := admin(t)
	f := newFault(t, a)
	raw, err := pgxpool.New(context.Background(), postgresDSN(t))
	require.NoError(t, err)
	p, err := pgxcrl.Wrap(raw, config.WithRetryExec("{40P01:2,10ms}"), config.WithClock(coretest.NewClock(time.Time{})))
	require.NoError(t, err)
	defer p.Close()
	assert.Same(t, raw, p.Pgx())
	_, err = p.Exec(context.Background(), "SELECT "+f.call("40P01", 1))
	require.NoError(t, err)
	assert.Equal(t, int64(2), f.calls(t))

	_, err = pgxcrl.Wrap(raw, config.WithExecutionCutoff(time.Second))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "executionCutoff")
}

func TestPropertiesHotReload(t *testing.T) {
	a := admin(t)
	f := newFault(t, a)
	path := filepath.Join(t.TempDir(), "mssql-jdbc.properties")
	require.NoError(t, os.WriteFile(path, []byte("retryExec={40P01:1,10ms}\n"), 0o600))
	p := open(t, "", config.WithPropertiesFile(path), config.WithClock(coretest.NewClock(time.Time{})))
	_, err := p.Exec(context.Background(), "SELECT "+f.call("40P01", 3))
	assert.ErrorIs(t, err, core.ErrRetriesExhausted)
	assert.Equal(t, int64(2), f.calls(t))

	require.NoError(t, os.WriteFile(path, []byte("retryExec={40P01:3,10ms}\n"), 0o600))
	require.NoError(t, p.Runtime().Reload())
	_, err = p.Exec(context.Background(), "SELECT "+f.call("40P01", 3))
	require.NoError(t, err)
	assert.Equal(t, int64(4), f.calls(t))
}

func TestStatConfigReset(t *testing.T) {
	p := open(t, "")
	require.NoError(t, p.Ping(context.Background()))
	assert.GreaterOrEqual(t, p.Stat().TotalConns(), int32(1))
	assert.NotNil(t, p.Config().ConnConfig)
	p.Reset()
	assert.Equal(t, int32(0), p.Stat().TotalConns())
}

func TestConnectionLoopRetriesAResetDuringStartup(t *testing.T) {
	proxy, dsn := newLoginProxy(t)
	proxy.resets.Store(2)
	clock := coretest.NewClock(time.Time{})
	obs := &coretest.Observer{}
	p, err := pgxcrl.Open(context.Background(), withParams(dsn, "connectRetryCount=2&connectRetryInterval=1"),
		config.WithClock(clock), config.WithObserver(obs))
	require.NoError(t, err)
	defer p.Close()
	var v int
	require.NoError(t, p.QueryRow(context.Background(), "SELECT 1").Scan(&v))
	assert.Equal(t, int32(3), proxy.logins.Load(), "startup messages sent")
	assert.Equal(t, int32(1), proxy.passed.Load(), "logins the server saw")
	assert.Equal(t, []time.Duration{0, time.Second}, clock.Sleeps(), "the first retry at once, then connectRetryInterval")
	for _, r := range obs.Snapshot().Retries {
		assert.Equal(t, core.KindConnection, r.Kind)
	}
}

func TestConnectionLoopOff(t *testing.T) {
	proxy, dsn := newLoginProxy(t)
	proxy.resets.Store(1)
	p, err := pgxcrl.Open(context.Background(), withParams(dsn, "connectRetryCount=0"))
	require.NoError(t, err)
	defer p.Close()
	_, err = p.Exec(context.Background(), "SELECT 1")
	var ce *pgconn.ConnectError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, int32(1), proxy.logins.Load())
	assert.Equal(t, int32(0), proxy.passed.Load())
}

// realDeadlock makes the statement that run runs on p (a call of a
// function that locks row 2, then row 1) the victim of a real deadlock
// with another session that holds row 1 and then asks for row 2, once;
// the statement loop runs it again, and both sessions' work is applied
// exactly once.
func realDeadlock(t *testing.T, run func(p *pgxcrl.Pool, query string) error) {
	ctx := context.Background()
	a := admin(t)
	tbl := table(t, a, "deadlock", "id int PRIMARY KEY, v int")
	mustExec(t, a, "INSERT INTO "+tbl+" VALUES (1, 0), (2, 0)")
	fn := name("lock21")
	mustExec(t, a, "CREATE SEQUENCE "+fn+"_calls")
	mustExec(t, a, `CREATE FUNCTION `+fn+`() RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	PERFORM nextval('`+fn+`_calls');
	UPDATE `+tbl+` SET v = v + 1 WHERE id = 2;
	PERFORM pg_sleep(0.3);
	UPDATE `+tbl+` SET v = v + 1 WHERE id = 1;
	RETURN 1;
END $$`)
	t.Cleanup(func() {
		mustExec(t, a, "DROP FUNCTION "+fn+"()")
		mustExec(t, a, "DROP SEQUENCE "+fn+"_calls")
	})
	// The pool's session looks for a deadlock 500 ms after it began to
	// wait, when the holder waits too (the holder would look after 10 s),
	// so that its statement is the victim. The retry waits (on the real
	// clock) until the holder has taken row 2, so it queues behind the
	// holder instead of deadlocking again.
	p := open(t, "deadlock_timeout=500ms", config.WithRetryExec("{40P01:3,200ms}"))
	tx := holdRow1(t, ctx, tbl)
	done := make(chan error, 1)
	go func() { done <- run(p, "SELECT "+fn+"()") }()
	waitFor(t, a, "SELECT count(*) > 0 FROM pg_stat_activity WHERE strpos(query, $1) > 0 AND wait_event = 'PgSleep'", fn+"()")
	_, err := tx.Exec(ctx, "UPDATE "+tbl+" SET v = v + 10 WHERE id = 2")
	require.NoError(t, err, "the holder goes on once the pool's statement, the victim, rolled back")
	require.NoError(t, tx.Commit(ctx))
	require.NoError(t, <-done)
	assert.Equal(t, int64(2), count(t, a, "SELECT last_value FROM "+fn+"_calls"), "run twice on the server")
	assert.Equal(t, int64(22), count(t, a, "SELECT sum(v) FROM "+tbl), "each session's work applied once")
	assert.Equal(t, int64(2), count(t, a, "SELECT count(*) FROM "+tbl+" WHERE v = 11"))
}

func TestRealDeadlockExec(t *testing.T) {
	realDeadlock(t, func(p *pgxcrl.Pool, query string) error {
		_, err := p.Exec(context.Background(), query)
		return err
	})
}

func TestRealDeadlockQueryRow(t *testing.T) {
	realDeadlock(t, func(p *pgxcrl.Pool, query string) error {
		var v int
		return p.QueryRow(context.Background(), query).Scan(&v)
	})
}

func TestRealDeadlockQuery(t *testing.T) {
	realDeadlock(t, func(p *pgxcrl.Pool, query string) error {
		rows, err := p.Query(context.Background(), query)
		if err != nil {
			return err
		}
		_, err = pgx.CollectRows(rows, pgx.RowTo[int32])
		return err
	})
}
