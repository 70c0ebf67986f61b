package config

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// propertiesFile is a properties file in a test's temporary directory whose
// every write gets a new modification time, as an edit a second later would.
type propertiesFile struct {
	t     *testing.T
	path  string
	mtime time.Time
}

func newPropertiesFile(t *testing.T, content string) *propertiesFile {
	t.Helper()
	f := &propertiesFile{t: t, path: filepath.Join(t.TempDir(), DefaultPropertiesFile), mtime: time.Now().Add(-time.Hour)}
	f.write(content)
	return f
}

func (f *propertiesFile) write(content string) {
	f.t.Helper()
	require.NoError(f.t, os.WriteFile(f.path, []byte(content), 0o644))
	f.mtime = f.mtime.Add(time.Second)
	require.NoError(f.t, os.Chtimes(f.path, f.mtime, f.mtime))
}

// statement runs one statement that succeeds, which gives the Runtime its
// chance to look at the file.
func statement(t *testing.T, rt *Runtime) {
	t.Helper()
	require.NoError(t, rt.Retrier().Do(context.Background(), "select 1", func(context.Context) error { return nil }))
}

func ruleCount(rt *Runtime, n int32) int {
	r, ok := rt.Retrier().Policy().Statement.Lookup(n)
	if !ok {
		return -1
	}
	return r.Count()
}

type reloadFixture struct {
	file  *propertiesFile
	clock *coretest.Clock
	obs   *coretest.Observer
	rt    *Runtime
}

func newReloadFixture(t *testing.T, content string, opts ...Option) *reloadFixture {
	t.Helper()
	f := &reloadFixture{file: newPropertiesFile(t, content), clock: coretest.NewClock(time.Time{}), obs: &coretest.Observer{}}
	opts = append([]Option{WithPropertiesFile(f.file.path), WithRetryRefresh(time.Second), WithClock(f.clock), WithObserver(f.obs)}, opts...)
	rt, _, err := NewRuntime("sqlserver", "server=h", opts...)
	require.NoError(t, err)
	f.rt = rt
	return f
}

// due moves the clock past retryRefresh and runs a statement.
func (f *reloadFixture) due(t *testing.T) {
	t.Helper()
	f.clock.Advance(time.Second + time.Millisecond)
	statement(t, f.rt)
}

func (f *reloadFixture) reloads() []core.RulesReloaded { return f.obs.Snapshot().Reloads }

func TestHotReloadGoodEdit(t *testing.T) {
	f := newReloadFixture(t, "retryExec={1205:3,1}\n")
	require.Equal(t, 3, ruleCount(f.rt, 1205), "1205 retries")
	f.file.write("retryExec={1205:5,1}\nretryExec={1222:2,1}\n")
	statement(t, f.rt) // not due yet
	require.Equal(t, 3, ruleCount(f.rt, 1205), "1205 retries: the file is not re-read before retryRefresh")
	f.due(t)
	require.Equal(t, 5, ruleCount(f.rt, 1205), "1205 retries after the edit")
	require.Equal(t, 2, ruleCount(f.rt, 1222), "1222 retries after the edit")
	ev := f.reloads()
	require.Len(t, ev, 1, "reload events")
	require.NoError(t, ev[0].Err, "the reload succeeded")
	require.Equal(t, f.file.path, ev[0].Path, "the event's path")
	f.due(t) // unchanged: no event, no re-read
	require.Len(t, f.reloads(), 1, "an unchanged file is not reloaded")
}

func TestHotReloadBrokenEditKeepsLastGoodRules(t *testing.T) {
	f := newReloadFixture(t, "retryExec={1205:3,1}\n")
	f.file.write("# edited\nretryExec={1205:4,1}\nretryExec={1222:x}\n")
	f.due(t)
	require.Equal(t, 3, ruleCount(f.rt, 1205), "1205 retries: a broken file does not change the rules")
	ev := f.reloads()
	require.Len(t, ev, 1, "reload events")
	require.Error(t, ev[0].Err, "the reload failed")
	require.Equal(t, 3, ev[0].Line, "the failing line")
	assert.ErrorIs(t, ev[0].Err, core.ErrInvalidParameterNumber)
	assert.ErrorContains(t, ev[0].Err, ":3:")
	f.due(t) // still broken, unchanged: reported once
	require.Len(t, f.reloads(), 1, "a broken file is reported once")
	f.file.write("retryExec={1205:6,1}\nretryFoo=1\n")
	f.due(t)
	ev = f.reloads()
	require.Len(t, ev, 2, "reload events")
	require.Equal(t, 2, ev[1].Line, "the unknown key's line")
	require.ErrorIs(t, ev[1].Err, ErrUnknownKey)
	f.file.write("retryExec={1205:7,1}\n")
	f.due(t)
	require.Equal(t, 7, ruleCount(f.rt, 1205), "1205 retries: the fixed file takes effect")
	ev = f.reloads()
	require.Len(t, ev, 3, "reload events")
	require.NoError(t, ev[2].Err, "the fixed file's reload")
}

func TestHotReloadDeletedFileKeepsLastRules(t *testing.T) {
	f := newReloadFixture(t, "retryExec={1205:3,1}\n")
	require.NoError(t, os.Remove(f.file.path))
	f.due(t)
	require.Equal(t, 3, ruleCount(f.rt, 1205), "1205 retries after the file was deleted")
	ev := f.reloads()
	require.Len(t, ev, 1, "reload events")
	require.ErrorIs(t, ev[0].Err, fs.ErrNotExist)
	require.ErrorContains(t, ev[0].Err, "deleted")
	f.due(t)
	require.Len(t, f.reloads(), 1, "the deletion is reported once")
	f.file.write("retryExec={1205:4,1}\n") // back again
	f.due(t)
	require.Equal(t, 4, ruleCount(f.rt, 1205), "1205 retries: the restored file takes effect")
}

func TestHotReloadRefreshFromFile(t *testing.T) {
	f := &reloadFixture{file: newPropertiesFile(t, "retryRefresh=1m\nretryExec={1205:3,1}\n"), clock: coretest.NewClock(time.Time{}), obs: &coretest.Observer{}}
	rt, _, err := NewRuntime("sqlserver", "", WithPropertiesFile(f.file.path), WithClock(f.clock), WithObserver(f.obs))
	require.NoError(t, err)
	f.file.write("retryRefresh=1m\nretryExec={1205:4,1}\n")
	f.clock.Advance(59 * time.Second)
	statement(t, rt)
	require.Equal(t, 3, ruleCount(rt, 1205), "not re-read before the file's retryRefresh")
	f.clock.Advance(2 * time.Second)
	statement(t, rt)
	require.Equal(t, 4, ruleCount(rt, 1205), "re-read after the file's retryRefresh")
}

func TestReloadNow(t *testing.T) {
	f := newReloadFixture(t, "retryExec={1205:3,1}\n")
	f.file.write("retryExec={1205:9,1}\n")
	require.NoError(t, f.rt.Reload())
	require.Equal(t, 9, ruleCount(f.rt, 1205), "Reload takes effect")
	f.file.write("retryExec={1205:x}\n")
	require.Error(t, f.rt.Reload(), "Reload of a broken file")
	require.Equal(t, 9, ruleCount(f.rt, 1205), "a broken file keeps the rules")
}

// TestHotReloadConcurrent runs statements on many goroutines while the file
// is edited, broken, deleted and restored; run it with -race.
func TestHotReloadConcurrent(t *testing.T) {
	f := newReloadFixture(t, "retryExec={1205:1,1}\n")
	var (
		stop atomic.Bool
		wg   sync.WaitGroup
	)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				_ = f.rt.Retrier().Do(context.Background(), "update t", func(context.Context) error { return nil })
				p := f.rt.Retrier().Policy()
				r, ok := p.Statement.Lookup(1205)
				if !assert.True(t, ok, "a statement sees a rule for 1205") ||
					!assert.GreaterOrEqual(t, r.Count(), 1, "the rule for 1205 retries") {
					return
				}
				_ = f.rt.Config()
			}
		}()
	}
	for i := 2; i <= 40; i++ {
		switch i % 5 {
		case 0:
			f.file.write("retryExec={1205:x}\n")
		case 3:
			_ = os.Remove(f.file.path)
		default:
			f.file.write("retryExec={1205:" + strconv.Itoa(i) + ",1}\n")
		}
		f.clock.Advance(1100 * time.Millisecond)
		time.Sleep(time.Millisecond)
	}
	f.file.write("retryExec={1205:99,1}\n")
	f.clock.Advance(1100 * time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for ruleCount(f.rt, 1205) != 99 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
		f.clock.Advance(1100 * time.Millisecond) // the look is lazy: let time pass
	}
	stop.Store(true)
	wg.Wait()
	require.Equal(t, 99, ruleCount(f.rt, 1205), "the last edit takes effect")
}

// An empty file is a write in progress (truncate, then write): it is not
// applied as "no rules", and the content written next is.
func TestHotReloadIgnoresEmptyFile(t *testing.T) {
	f := newReloadFixture(t, "retryExec={1205:3,1}\n")
	f.file.write("")
	f.clock.Advance(1100 * time.Millisecond)
	statement(t, f.rt)
	require.Equal(t, 3, ruleCount(f.rt, 1205), "an empty file does not replace the rules")
	f.file.write("retryExec={1205:5,1}\n")
	f.clock.Advance(1100 * time.Millisecond)
	statement(t, f.rt)
	require.Equal(t, 5, ruleCount(f.rt, 1205), "the content written after the empty file is applied")
}

func TestRefreshDoesNotAllocate(t *testing.T) {
	f := newPropertiesFile(t, "retryExec={1205:3,1}\n")
	rt, _, err := NewRuntime("sqlserver", "", WithPropertiesFile(f.path))
	require.NoError(t, err)
	require.Zero(t, testing.AllocsPerRun(1000, rt.refresh), "refresh allocates when nothing is due")
}

func TestPrecedence(t *testing.T) {
	f := &reloadFixture{file: newPropertiesFile(t, ""+
		"retryExec={1205:3,1}\n"+
		"retryConn={+50000}\n"+
		"connectRetryCount=5\n"+
		"loginTimeout=60\n"+
		"queryTimeout=5\n"+
		"retryJitter=full\n"+
		"retryBudget=off\n"), clock: coretest.NewClock(time.Time{}), obs: &coretest.Observer{}}
	dsn := "server=h;connectRetryCount=2;queryTimeout=-1;retryExec={1222:2,1};retryProperties=" + f.file.path
	rt, out, err := NewRuntime("sqlserver", dsn,
		WithRetryExec("{1213:4,1}"), WithClock(f.clock), WithObserver(f.obs), WithRetryRefresh(time.Second))
	require.NoError(t, err)
	assert.Equal(t, "server=h", out, "driver DSN")
	check := func(login time.Duration) {
		t.Helper()
		p := rt.Retrier().Policy()
		assert.Equal(t, 4, ruleCount(rt, 1213), "retryExec: code wins, got %s", p.Statement)
		assert.Equal(t, -1, ruleCount(rt, 1205), "retryExec: code wins, got %s", p.Statement)
		assert.Equal(t, -1, ruleCount(rt, 1222), "retryExec: code wins, got %s", p.Statement)
		assert.Equal(t, 2, p.ConnectRetryCount, "connectRetryCount: the DSN wins over the file")
		assert.Zero(t, p.QueryTimeout, "queryTimeout: the DSN's -1 (not set) wins over the file")
		assert.Equal(t, login, p.LoginTimeout, "loginTimeout: the file's")
		assert.True(t, p.Connection.Retryable(50000), "the file's retryConn is used: %s", p.Connection)
		assert.Equal(t, core.JitterFull, p.Jitter, "the file's retryJitter is used")
	}
	check(60 * time.Second)
	assert.Nil(t, rt.Retrier().Budget(), "the file's retryBudget=off is used")
	f.file.write("retryExec={1205:9,1}\nretryConn={+50000}\nconnectRetryCount=7\nloginTimeout=50\nqueryTimeout=9\nretryJitter=full\n")
	f.clock.Advance(2 * time.Second)
	statement(t, rt)
	check(50 * time.Second)
	c := rt.Config()
	assert.Equal(t, 50*time.Second, c.LoginTimeout, "Config().LoginTimeout")
	assert.Equal(t, 2, c.ConnectRetryCount, "Config().ConnectRetryCount")

	// Explicit zero values in code win over the file too.
	rt2, _, err := NewRuntime("sqlserver", "", WithPropertiesFile(f.file.path),
		WithRetryExec(""), WithQueryTimeout(0), WithLoginTimeout(0), WithConnectRetryCount(0))
	require.NoError(t, err)
	p := rt2.Retrier().Policy()
	// Explicit zeros in code win over the file.
	assert.Zero(t, p.Statement.Len(), "statement rules")
	assert.Zero(t, p.QueryTimeout, "queryTimeout")
	assert.Zero(t, p.LoginTimeout, "loginTimeout")
	assert.Equal(t, core.Disabled, p.ConnectRetryCount, "connectRetryCount")
}

func TestDefaults(t *testing.T) {
	t.Setenv(EnvProperties, "")
	chdir(t, t.TempDir())
	rt, out, err := NewRuntime("sqlserver", "server=h")
	require.NoError(t, err)
	assert.Equal(t, "server=h", out, "driver DSN")
	assert.Empty(t, rt.PropertiesPath(), "no properties file")
	// The zero Config is the JDBC defaults, but for the default rule.
	p := rt.Retrier().Policy()
	assert.Equal(t, "{deadlock:3,100ms*2};{serialization:3,100ms*2}", p.Statement.String(), "statement rules: DefaultRetryExec")
	assert.Equal(t, core.JitterFull, p.Jitter, "the default rule's waits are jittered")
	assert.Zero(t, p.ConnectRetryCount, "connectRetryCount")
	assert.Zero(t, p.ConnectRetryInterval, "connectRetryInterval")
	assert.Zero(t, p.LoginTimeout, "loginTimeout")
	assert.Zero(t, p.QueryTimeout, "queryTimeout")
	assert.NotNil(t, rt.Retrier().Budget(), "the retry budget is on by default")
	rt2, _, err := NewRuntime("sqlserver", "", WithoutRetryBudget())
	require.NoError(t, err)
	assert.Nil(t, rt2.Retrier().Budget(), "WithoutRetryBudget turns the budget off")
}

func TestPropertiesLookup(t *testing.T) {
	dir := t.TempDir()
	chdir(t, dir)
	t.Setenv(EnvProperties, "")
	require.NoError(t, os.WriteFile(DefaultPropertiesFile, []byte("retryExec={1205:2,1}\n"), 0o644))
	rt, _, err := NewRuntime("sqlserver", "")
	require.NoError(t, err)
	want, _ := filepath.Abs(DefaultPropertiesFile)
	assert.Equal(t, want, rt.PropertiesPath(), "the working directory's file")
	assert.Equal(t, 2, ruleCount(rt, 1205), "1205 retries from the working directory's file")

	env := newPropertiesFile(t, "retryExec={1205:4,1}\n")
	t.Setenv(EnvProperties, env.path)
	rt, _, err = NewRuntime("sqlserver", "")
	require.NoError(t, err)
	assert.Equal(t, env.path, rt.PropertiesPath(), "the file %s names", EnvProperties)
	assert.Equal(t, 4, ruleCount(rt, 1205), "1205 retries from the file %s names", EnvProperties)

	code := newPropertiesFile(t, "retryExec={1205:6,1}\n")
	rt, _, err = NewRuntime("sqlserver", "", WithPropertiesFile(code.path))
	require.NoError(t, err)
	assert.Equal(t, 6, ruleCount(rt, 1205), "the file given in code wins over the environment")

	for name, fn := range map[string]func() error{
		"code": func() error {
			_, _, err := NewRuntime("sqlserver", "", WithPropertiesFile(filepath.Join(dir, "missing")))
			return err
		},
		"DSN": func() error {
			_, _, err := NewRuntime("sqlserver", "retryProperties="+filepath.Join(dir, "missing"))
			return err
		},
		"env": func() error {
			t.Setenv(EnvProperties, filepath.Join(dir, "missing"))
			_, _, err := NewRuntime("sqlserver", "")
			return err
		},
	} {
		err := fn()
		assert.ErrorIs(t, err, fs.ErrNotExist, "%s: a missing explicit file", name)
		assert.ErrorContains(t, err, "missing", "%s: a missing explicit file", name)
	}

	bad := newPropertiesFile(t, "retryExec={1205:3,1}\n\nconnectRetryCount=300\n")
	_, _, err = NewRuntime("sqlserver", "", WithPropertiesFile(bad.path))
	var fe *FileError
	require.ErrorAs(t, err, &fe, "a bad file at start")
	assert.Equal(t, 3, fe.Line, "the bad line")
	assert.ErrorContains(t, err, `connectRetryCount="300"`)
}

func TestIsolation(t *testing.T) {
	clock := coretest.NewClock(time.Time{})
	fa := newPropertiesFile(t, "retryExec={1205:3,1}\n")
	fb := newPropertiesFile(t, "retryExec={1205:7,1}\n")
	a, _, err := NewRuntime("sqlserver", "server=a;retryConn={+50000}", WithPropertiesFile(fa.path), WithClock(clock), WithRetryRefresh(time.Second))
	require.NoError(t, err)
	b, _, err := NewRuntime("mysql", "u@tcp(b)/db?retryProperties="+fb.path, WithClock(clock), WithRetryRefresh(time.Second))
	require.NoError(t, err)
	c, _, err := NewRuntime("sqlserver", "", WithPropertiesFile(fa.path), WithRetryExec("{1205:1,1}"), WithClock(clock))
	require.NoError(t, err)
	require.Equal(t, 3, ruleCount(a, 1205), "1205 retries of a")
	require.Equal(t, 7, ruleCount(b, 1205), "1205 retries of b")
	require.Equal(t, 1, ruleCount(c, 1205), "1205 retries of c")
	assert.True(t, a.Retrier().Policy().Connection.Retryable(50000), "a's DSN rules apply to a")
	assert.False(t, b.Retrier().Policy().Connection.Retryable(50000), "a's DSN rules do not leak into b")
	fa.write("retryExec={1205:4,1}\n")
	clock.Advance(2 * time.Second)
	statement(t, a)
	statement(t, b)
	statement(t, c)
	require.Equal(t, 4, ruleCount(a, 1205), "after a's file changed: 1205 retries of a")
	require.Equal(t, 7, ruleCount(b, 1205), "after a's file changed: 1205 retries of b")
	require.Equal(t, 1, ruleCount(c, 1205), "after a's file changed: 1205 retries of c (code wins)")
	assert.NotSame(t, a.Retrier().Budget(), b.Retrier().Budget(), "two handles share one retry budget")
}

func TestOptionsValidated(t *testing.T) {
	for _, tt := range []struct {
		opt  Option
		want string
	}{
		{WithConnectRetryCount(300), "connectRetryCount=\"300\""},
		{WithConnectRetryInterval(time.Hour), "connectRetryInterval=\"1h0m0s\""},
		{WithLoginTimeout(-time.Second), "loginTimeout"},
		{WithQueryTimeout(-time.Second), "queryTimeout"},
		{WithJitter(9), "retryJitter"},
		{WithRetryExec("{1205:x}"), `retryExec="{1205:x}"`},
		{WithRetryConn("{4060:1}"), `retryConn="{4060:1}"`},
	} {
		_, _, err := NewRuntime("sqlserver", "", tt.opt, WithPropertiesFile(""))
		if assert.ErrorContains(t, err, tt.want) {
			assert.True(t, strings.HasPrefix(err.Error(), "config: "), "error %q starts with config: ", err)
		}
	}
}

func TestBudgetIsReadAtStart(t *testing.T) {
	f := newReloadFixture(t, "retryBudget=max=5\nretryExec={1205:1,1}\n")
	b := f.rt.Retrier().Budget()
	require.NotNil(t, b, "budget")
	require.Equal(t, 5.0, b.Available(), "the budget's tokens")
	f.file.write("retryBudget=off\nretryExec={1205:2,1}\n")
	f.due(t)
	require.Equal(t, 2, ruleCount(f.rt, 1205), "the edit takes effect")
	// The budget does not change without a restart.
	c := f.rt.Config()
	assert.False(t, c.NoBudget, "NoBudget")
	assert.Equal(t, 5.0, c.Budget.Max, "Budget.Max")
	assert.Same(t, b, f.rt.Retrier().Budget(), "the Retrier's budget")
}

// TestHotReloadWaitsForAWholeWrite: a changed file is applied at once only
// when it ends with a line end; otherwise only when the next look finds the
// same content. A same-size rewrite within one modification-time tick is
// still seen (issue 11, item 5).
func TestHotReloadWaitsForAWholeWrite(t *testing.T) {
	f := newReloadFixture(t, "retryExec={1205:3,1}\nqueryTimeout=30\n")
	queryTimeout := func() time.Duration { return f.rt.Retrier().Policy().QueryTimeout }
	require.Equal(t, 30*time.Second, queryTimeout())

	// Caught mid-write: "queryTimeout=3" of "queryTimeout=30".
	f.file.write("retryExec={1205:3,1}\nqueryTimeout=3")
	f.due(t)
	assert.Equal(t, 30*time.Second, queryTimeout(), "a prefix without a line end was applied")
	assert.Empty(t, f.reloads())
	// The write completes: it ends with a line end, applied at once.
	f.file.write("retryExec={1205:3,1}\nqueryTimeout=20\n")
	f.due(t)
	assert.Equal(t, 20*time.Second, queryTimeout())
	require.Len(t, f.reloads(), 1)

	// A 9-byte prefix would drop every rule.
	f.file.write("retryExec")
	f.due(t)
	assert.Equal(t, 3, ruleCount(f.rt, 1205), "a 9-byte prefix replaced the rules")
	// A filter cut mid-word, then the rest.
	f.file.write("retryExec={1205:3,1:select,up")
	f.due(t)
	rule, ok := f.rt.Retrier().Policy().Statement.Lookup(1205)
	require.True(t, ok)
	assert.Nil(t, rule.Filter(), "a filter cut mid-word was applied")
	f.file.write("retryExec={1205:3,1:select,update}\n")
	f.due(t)
	rule, _ = f.rt.Retrier().Policy().Statement.Lookup(1205)
	assert.Equal(t, []string{"select", "update"}, rule.Filter())
	require.Len(t, f.reloads(), 2)

	// A file that does not end with a line end is applied when the next
	// look finds it unchanged.
	f.file.write("retryExec={1205:5,1}")
	f.due(t)
	assert.Equal(t, 3, ruleCount(f.rt, 1205))
	f.due(t)
	assert.Equal(t, 5, ruleCount(f.rt, 1205), "an unchanged file without a final line end was never applied")
	require.Len(t, f.reloads(), 3)

	// Same size, same modification time, new content.
	fi, err := os.Stat(f.file.path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(f.file.path, []byte("retryExec={1205:7,1}"), 0o644))
	require.NoError(t, os.Chtimes(f.file.path, fi.ModTime(), fi.ModTime()))
	f.due(t)
	f.due(t)
	assert.Equal(t, 7, ruleCount(f.rt, 1205), "a same-size rewrite in one tick was not seen")
}

// TestPropertiesFileOnlyForSQLServer: mssql-jdbc.properties in the working
// directory is the JDBC driver's file; it sets the rules of SQL Server
// handles only. A file given in code, in the DSN or by CRL_PROPERTIES
// applies to any handle (issue 14, item 5).
func TestPropertiesFileOnlyForSQLServer(t *testing.T) {
	dir := t.TempDir()
	chdir(t, dir)
	t.Setenv(EnvProperties, "")
	require.NoError(t, os.WriteFile(DefaultPropertiesFile, []byte("retryExec={1205:2,1}\n"), 0o644))
	for _, d := range []struct{ driver, dsn string }{
		{"sqlserver", "server=h"}, {"mssql", "server=h"}, {"azuresql", "server=h"},
	} {
		rt, _, err := NewRuntime(d.driver, d.dsn)
		require.NoError(t, err)
		assert.NotEmpty(t, rt.PropertiesPath(), d.driver)
		assert.Equal(t, 2, ruleCount(rt, 1205), d.driver)
	}
	for _, d := range []struct{ driver, dsn string }{
		{"mysql", "u@tcp(h)/db"}, {"pgx", "host=h"}, {"postgres", "postgres://u@h/db"},
	} {
		rt, _, err := NewRuntime(d.driver, d.dsn)
		require.NoError(t, err)
		assert.Empty(t, rt.PropertiesPath(), d.driver)
		assert.True(t, rt.Config().UsesDefaultRule(), "%s took the SQL Server file's rules", d.driver)
	}
	given := newPropertiesFile(t, "retryExec={1205:4,1}\n")
	rt, _, err := NewRuntime("mysql", "u@tcp(h)/db?retryProperties="+given.path)
	require.NoError(t, err)
	assert.Equal(t, 4, ruleCount(rt, 1205), "retryProperties")
	rt, _, err = NewRuntime("pgx", "host=h", WithPropertiesFile(given.path))
	require.NoError(t, err)
	assert.Equal(t, 4, ruleCount(rt, 1205), "WithPropertiesFile")
	t.Setenv(EnvProperties, given.path)
	rt, _, err = NewRuntime("pgx", "host=h")
	require.NoError(t, err)
	assert.Equal(t, 4, ruleCount(rt, 1205), EnvProperties)
}

// TestAzureConnectRetryCount: as the JDBC driver, a SQL Server DSN that
// names an Azure SQL server gets connectRetryCount 2 and a Synapse
// serverless endpoint 5, unless code, the DSN or the properties file set
// it (issue 11, item 8).
func TestAzureConnectRetryCount(t *testing.T) {
	t.Setenv(EnvProperties, "")
	chdir(t, t.TempDir())
	count := func(driver, dsn string, opts ...Option) int {
		t.Helper()
		rt, _, err := NewRuntime(driver, dsn, opts...)
		require.NoError(t, err, dsn)
		return rt.Config().ConnectRetryCount
	}
	for _, tc := range []struct {
		driver, dsn string
		want        int
	}{
		{"sqlserver", "sqlserver://u:p@myserver.database.windows.net?database=d", 2},
		{"sqlserver", "sqlserver://u:p@MyServer.Database.Windows.Net:1433?database=d", 2},
		{"sqlserver", "server=tcp:myserver.database.windows.net,1433;database=d", 2},
		{"azuresql", "Data Source=myserver.database.usgovcloudapi.net;Initial Catalog=d", 2},
		{"mssql", "odbc:server={myserver.database.windows.net};database=d", 2},
		{"mssql", "odbc:server={myserver.database.chinacloudapi.cn};database=d", 2}, // Azure China, which JDBC misses
		{"sqlserver", "sqlserver://u:p@myserver.database.chinacloudapi.cn?database=d", 2},
		{"sqlserver", "server=myserver.chinacloudapi.cn;database=d", 0}, // not a SQL endpoint
		{"sqlserver", "server=myserver.database.china.cloudapi.cn\\inst;database=d", 2},
		{"sqlserver", "sqlserver://u:p@myws-ondemand.sql.azuresynapse.net?database=d", 5},
		{"sqlserver", "server=myws-ondemand.database.windows.net;database=d", 5},
		{"sqlserver", "server=localhost;database=d", 0},
		{"sqlserver", "server=database.windows.net.example.com", 0},
		{"mysql", "u@tcp(myserver.database.windows.net)/db", 0},
	} {
		assert.Equal(t, tc.want, count(tc.driver, tc.dsn), tc.dsn)
	}
	// Set anywhere, the user's value wins, 1 included.
	azure := "sqlserver://u:p@myserver.database.windows.net?database=d"
	assert.Equal(t, 1, count("sqlserver", azure+"&connectRetryCount=1"))
	assert.Equal(t, core.Disabled, count("sqlserver", azure, WithConnectRetryCount(0)))
	file := newPropertiesFile(t, "connectRetryCount=1\n")
	assert.Equal(t, 1, count("sqlserver", azure, WithPropertiesFile(file.path)))

	// The default reaches the loop: a persistent 40613 gets 3 × 3 logins
	// in three rounds, within loginTimeout.
	clock := coretest.NewClock(time.Time{})
	rt, _, err := NewRuntime("sqlserver", azure+"&loginTimeout=60", WithClock(clock), WithoutRetryBudget())
	require.NoError(t, err)
	calls := 0
	_ = rt.Retrier().Connect(context.Background(), func(context.Context) error {
		calls++
		return azureFailover{}
	})
	assert.Equal(t, 9, calls)
}

// azureFailover stands in for go-mssqldb's error 40613.
type azureFailover struct{}

func (azureFailover) Error() string         { return "mssql: database not currently available (40613)" }
func (azureFailover) SQLErrorNumber() int32 { return 40613 }

// chdir changes the working directory for the rest of the test, as
// testing.T.Chdir does from Go 1.24 (the module builds with Go 1.22).
func chdir(t *testing.T, dir string) {
	t.Helper()
	old, err := os.Getwd()
	require.NoError(t, err)
	require.NoError(t, os.Chdir(dir))
	t.Cleanup(func() { _ = os.Chdir(old) })
}

// BenchmarkNewRuntime measures opening a handle's settings from a DSN of
// each form (and a properties file): a pool is opened once, but reading
// its DSN must stay cheap.
func BenchmarkNewRuntime(b *testing.B) {
	file := filepath.Join(b.TempDir(), DefaultPropertiesFile)
	if err := os.WriteFile(file, []byte("retryExec={1205,1222:3,100ms*2}\nretryConn={+4060}\nqueryTimeout=30\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, driver, dsn string }{
		{"ADO", "sqlserver", "server=db.example,1433;user id=sa;password=secret;database=shop;retryExec={1205:3;1222:2,1+1};retryConn={+4060};connectRetryCount=3;encrypt=disable"},
		{"URL", "sqlserver", "sqlserver://sa:secret@db.example:1433/inst?database=shop&retryExec={1205:3;1222:2}&retryConn=%2B4060&encrypt=disable"},
		{"MySQL", "mysql", "app:secret@tcp(db.example:3306)/shop?parseTime=true&retryExec={1213:3,100ms}&queryTimeout=5&loc=UTC"},
		{"KeyValue", "pgx", "host=db.example user=app password='se cret' dbname=shop retryExec={40001,40P01:3;1222:2} retryBudget={max=50, earn=0.2}"},
		{"File", "mysql", "app@tcp(db.example:3306)/shop?retryProperties=" + file},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, _, err := NewRuntime(bc.driver, bc.dsn); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
