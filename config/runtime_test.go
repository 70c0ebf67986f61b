package config

import (
	"context"
	"errors"
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
	if err := os.WriteFile(f.path, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
	f.mtime = f.mtime.Add(time.Second)
	if err := os.Chtimes(f.path, f.mtime, f.mtime); err != nil {
		f.t.Fatal(err)
	}
}

// statement runs one statement that succeeds, which gives the Runtime its
// chance to look at the file.
func statement(t *testing.T, rt *Runtime) {
	t.Helper()
	if err := rt.Retrier().Do(context.Background(), "select 1", func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
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
	rt, _, err := New("sqlserver", "server=h", opts...)
	if err != nil {
		t.Fatal(err)
	}
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
	if got := ruleCount(f.rt, 1205); got != 3 {
		t.Fatalf("1205: %d retries, want 3", got)
	}
	f.file.write("retryExec={1205:5,1}\nretryExec={1222:2,1}\n")
	statement(t, f.rt) // not due yet
	if got := ruleCount(f.rt, 1205); got != 3 {
		t.Fatalf("the file was re-read before retryRefresh: 1205 has %d retries", got)
	}
	f.due(t)
	if got, got2 := ruleCount(f.rt, 1205), ruleCount(f.rt, 1222); got != 5 || got2 != 2 {
		t.Fatalf("after the edit: 1205 %d, 1222 %d; want 5, 2", got, got2)
	}
	ev := f.reloads()
	if len(ev) != 1 || ev[0].Err != nil || ev[0].Path != f.file.path {
		t.Fatalf("events %+v, want one success for %s", ev, f.file.path)
	}
	f.due(t) // unchanged: no event, no re-read
	if len(f.reloads()) != 1 {
		t.Fatalf("an unchanged file was reloaded: %+v", f.reloads())
	}
}

func TestHotReloadBrokenEditKeepsLastGoodRules(t *testing.T) {
	f := newReloadFixture(t, "retryExec={1205:3,1}\n")
	f.file.write("# edited\nretryExec={1205:4,1}\nretryExec={1222:x}\n")
	f.due(t)
	if got := ruleCount(f.rt, 1205); got != 3 {
		t.Fatalf("a broken file changed the rules: 1205 has %d retries", got)
	}
	ev := f.reloads()
	if len(ev) != 1 || ev[0].Err == nil || ev[0].Line != 3 {
		t.Fatalf("events %+v, want one failure on line 3", ev)
	}
	if !errors.Is(ev[0].Err, core.ErrInvalidParameterNumber) || !strings.Contains(ev[0].Err.Error(), ":3:") {
		t.Errorf("event error %q", ev[0].Err)
	}
	f.due(t) // still broken, unchanged: reported once
	if len(f.reloads()) != 1 {
		t.Fatalf("a broken file was reported again: %+v", f.reloads())
	}
	f.file.write("retryExec={1205:6,1}\nretryFoo=1\n")
	f.due(t)
	if ev := f.reloads(); len(ev) != 2 || ev[1].Line != 2 || !errors.Is(ev[1].Err, ErrUnknownKey) {
		t.Fatalf("events %+v, want an unknown key on line 2", ev)
	}
	f.file.write("retryExec={1205:7,1}\n")
	f.due(t)
	if got := ruleCount(f.rt, 1205); got != 7 {
		t.Fatalf("the fixed file did not take effect: 1205 has %d retries", got)
	}
	if ev := f.reloads(); len(ev) != 3 || ev[2].Err != nil {
		t.Fatalf("events %+v", ev)
	}
}

func TestHotReloadDeletedFileKeepsLastRules(t *testing.T) {
	f := newReloadFixture(t, "retryExec={1205:3,1}\n")
	if err := os.Remove(f.file.path); err != nil {
		t.Fatal(err)
	}
	f.due(t)
	if got := ruleCount(f.rt, 1205); got != 3 {
		t.Fatalf("1205 has %d retries after the file was deleted, want 3", got)
	}
	ev := f.reloads()
	if len(ev) != 1 || !errors.Is(ev[0].Err, fs.ErrNotExist) || !strings.Contains(ev[0].Err.Error(), "deleted") {
		t.Fatalf("events %+v, want one 'deleted'", ev)
	}
	f.due(t)
	if len(f.reloads()) != 1 {
		t.Fatalf("the deletion was reported again: %+v", f.reloads())
	}
	f.file.write("retryExec={1205:4,1}\n") // back again
	f.due(t)
	if got := ruleCount(f.rt, 1205); got != 4 {
		t.Fatalf("the restored file did not take effect: %d", got)
	}
}

func TestHotReloadRefreshFromFile(t *testing.T) {
	f := &reloadFixture{file: newPropertiesFile(t, "retryRefresh=1m\nretryExec={1205:3,1}\n"), clock: coretest.NewClock(time.Time{}), obs: &coretest.Observer{}}
	rt, _, err := New("sqlserver", "", WithPropertiesFile(f.file.path), WithClock(f.clock), WithObserver(f.obs))
	if err != nil {
		t.Fatal(err)
	}
	f.file.write("retryRefresh=1m\nretryExec={1205:4,1}\n")
	f.clock.Advance(59 * time.Second)
	statement(t, rt)
	if ruleCount(rt, 1205) != 3 {
		t.Fatal("re-read before the file's retryRefresh")
	}
	f.clock.Advance(2 * time.Second)
	statement(t, rt)
	if ruleCount(rt, 1205) != 4 {
		t.Fatal("not re-read after the file's retryRefresh")
	}
}

func TestReloadNow(t *testing.T) {
	f := newReloadFixture(t, "retryExec={1205:3,1}\n")
	f.file.write("retryExec={1205:9,1}\n")
	if err := f.rt.Reload(); err != nil {
		t.Fatal(err)
	}
	if ruleCount(f.rt, 1205) != 9 {
		t.Fatal("Reload did not take effect")
	}
	f.file.write("retryExec={1205:x}\n")
	if err := f.rt.Reload(); err == nil || ruleCount(f.rt, 1205) != 9 {
		t.Fatalf("Reload of a broken file: %v", err)
	}
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
				if r, ok := p.Statement.Lookup(1205); !ok || r.Count() < 1 {
					t.Error("a statement saw no rule for 1205")
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
	if got := ruleCount(f.rt, 1205); got != 99 {
		t.Fatalf("the last edit did not take effect: %d", got)
	}
}

// An empty file is a write in progress (truncate, then write): it is not
// applied as "no rules", and the content written next is.
func TestHotReloadIgnoresEmptyFile(t *testing.T) {
	f := newReloadFixture(t, "retryExec={1205:3,1}\n")
	f.file.write("")
	f.clock.Advance(1100 * time.Millisecond)
	statement(t, f.rt)
	if got := ruleCount(f.rt, 1205); got != 3 {
		t.Fatalf("an empty file replaced the rules: %d", got)
	}
	f.file.write("retryExec={1205:5,1}\n")
	f.clock.Advance(1100 * time.Millisecond)
	statement(t, f.rt)
	if got := ruleCount(f.rt, 1205); got != 5 {
		t.Fatalf("the content written after the empty file was not applied: %d", got)
	}
}

func TestRefreshDoesNotAllocate(t *testing.T) {
	f := newPropertiesFile(t, "retryExec={1205:3,1}\n")
	rt, _, err := New("sqlserver", "", WithPropertiesFile(f.path))
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(1000, rt.refresh); n != 0 {
		t.Fatalf("refresh allocates %v times when nothing is due", n)
	}
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
	rt, out, err := New("sqlserver", dsn,
		WithRetryExec("{1213:4,1}"), WithClock(f.clock), WithObserver(f.obs), WithRetryRefresh(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if out != "server=h" {
		t.Errorf("driver DSN %q", out)
	}
	check := func(login time.Duration) {
		t.Helper()
		p := rt.Retrier().Policy()
		if ruleCount(rt, 1213) != 4 || ruleCount(rt, 1205) != -1 || ruleCount(rt, 1222) != -1 {
			t.Errorf("retryExec: code must win, got %s", p.Statement)
		}
		if p.ConnectRetryCount != 2 {
			t.Errorf("connectRetryCount %d: the DSN must win over the file", p.ConnectRetryCount)
		}
		if p.QueryTimeout != 0 {
			t.Errorf("queryTimeout %v: the DSN's -1 (not set) must win over the file", p.QueryTimeout)
		}
		if p.LoginTimeout != login {
			t.Errorf("loginTimeout %v, want the file's %v", p.LoginTimeout, login)
		}
		if !p.Connection.Retryable(50000) || p.Jitter != core.JitterFull {
			t.Errorf("the file's retryConn and retryJitter are not used: %s %v", p.Connection, p.Jitter)
		}
	}
	check(60 * time.Second)
	if rt.Retrier().Budget() != nil {
		t.Error("the file's retryBudget=off is not used")
	}
	f.file.write("retryExec={1205:9,1}\nretryConn={+50000}\nconnectRetryCount=7\nloginTimeout=50\nqueryTimeout=9\nretryJitter=full\n")
	f.clock.Advance(2 * time.Second)
	statement(t, rt)
	check(50 * time.Second)
	if c := rt.Config(); c.LoginTimeout != 50*time.Second || c.ConnectRetryCount != 2 {
		t.Errorf("Config() %+v", c)
	}

	// Explicit zero values in code win over the file too.
	rt2, _, err := New("sqlserver", "", WithPropertiesFile(f.file.path),
		WithRetryExec(""), WithQueryTimeout(0), WithLoginTimeout(0), WithConnectRetryCount(0))
	if err != nil {
		t.Fatal(err)
	}
	p := rt2.Retrier().Policy()
	if p.Statement.Len() != 0 || p.QueryTimeout != 0 || p.LoginTimeout != 0 || p.ConnectRetryCount != core.Disabled {
		t.Errorf("explicit zeros in code lost to the file: %+v", p)
	}
}

func TestDefaults(t *testing.T) {
	t.Setenv(EnvProperties, "")
	t.Chdir(t.TempDir())
	rt, out, err := New("sqlserver", "server=h")
	if err != nil {
		t.Fatal(err)
	}
	if out != "server=h" || rt.PropertiesPath() != "" {
		t.Errorf("out %q, path %q", out, rt.PropertiesPath())
	}
	p := rt.Retrier().Policy()
	if p.Statement.Len() != 0 || p.ConnectRetryCount != 0 || p.ConnectRetryInterval != 0 || p.LoginTimeout != 0 || p.QueryTimeout != 0 {
		t.Errorf("zero Config is not the JDBC defaults: %+v", p)
	}
	if rt.Retrier().Budget() == nil {
		t.Error("the retry budget is on by default")
	}
	if rt2, _, _ := New("sqlserver", "", WithoutRetryBudget()); rt2.Retrier().Budget() != nil {
		t.Error("WithoutRetryBudget left the budget on")
	}
}

func TestPropertiesLookup(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv(EnvProperties, "")
	if err := os.WriteFile(DefaultPropertiesFile, []byte("retryExec={1205:2,1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rt, _, err := New("sqlserver", "")
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := filepath.Abs(DefaultPropertiesFile); rt.PropertiesPath() != want || ruleCount(rt, 1205) != 2 {
		t.Errorf("working directory file: path %q, 1205 %d", rt.PropertiesPath(), ruleCount(rt, 1205))
	}

	env := newPropertiesFile(t, "retryExec={1205:4,1}\n")
	t.Setenv(EnvProperties, env.path)
	rt, _, err = New("sqlserver", "")
	if err != nil {
		t.Fatal(err)
	}
	if rt.PropertiesPath() != env.path || ruleCount(rt, 1205) != 4 {
		t.Errorf("%s: path %q, 1205 %d", EnvProperties, rt.PropertiesPath(), ruleCount(rt, 1205))
	}

	code := newPropertiesFile(t, "retryExec={1205:6,1}\n")
	rt, _, err = New("sqlserver", "", WithPropertiesFile(code.path))
	if err != nil {
		t.Fatal(err)
	}
	if ruleCount(rt, 1205) != 6 {
		t.Error("the file given in code must win over the environment")
	}

	for name, fn := range map[string]func() error{
		"code": func() error {
			_, _, err := New("sqlserver", "", WithPropertiesFile(filepath.Join(dir, "missing")))
			return err
		},
		"DSN": func() error {
			_, _, err := New("sqlserver", "retryProperties="+filepath.Join(dir, "missing"))
			return err
		},
		"env": func() error {
			t.Setenv(EnvProperties, filepath.Join(dir, "missing"))
			_, _, err := New("sqlserver", "")
			return err
		},
	} {
		if err := fn(); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "missing") {
			t.Errorf("%s: a missing explicit file gave %v", name, err)
		}
	}

	bad := newPropertiesFile(t, "retryExec={1205:3,1}\n\nconnectRetryCount=300\n")
	_, _, err = New("sqlserver", "", WithPropertiesFile(bad.path))
	var fe *FileError
	if !errors.As(err, &fe) || fe.Line != 3 || !strings.Contains(err.Error(), `connectRetryCount="300"`) {
		t.Errorf("a bad file at start: %v", err)
	}
}

func TestIsolation(t *testing.T) {
	clock := coretest.NewClock(time.Time{})
	fa := newPropertiesFile(t, "retryExec={1205:3,1}\n")
	fb := newPropertiesFile(t, "retryExec={1205:7,1}\n")
	a, _, err := New("sqlserver", "server=a;retryConn={+50000}", WithPropertiesFile(fa.path), WithClock(clock), WithRetryRefresh(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := New("mysql", "u@tcp(b)/db?retryProperties="+fb.path, WithClock(clock), WithRetryRefresh(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := New("sqlserver", "", WithPropertiesFile(fa.path), WithRetryExec("{1205:1,1}"), WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	if ruleCount(a, 1205) != 3 || ruleCount(b, 1205) != 7 || ruleCount(c, 1205) != 1 {
		t.Fatalf("1205: a %d, b %d, c %d", ruleCount(a, 1205), ruleCount(b, 1205), ruleCount(c, 1205))
	}
	if !a.Retrier().Policy().Connection.Retryable(50000) || b.Retrier().Policy().Connection.Retryable(50000) {
		t.Error("a's DSN rules leaked into b")
	}
	fa.write("retryExec={1205:4,1}\n")
	clock.Advance(2 * time.Second)
	statement(t, a)
	statement(t, b)
	statement(t, c)
	if ruleCount(a, 1205) != 4 || ruleCount(b, 1205) != 7 || ruleCount(c, 1205) != 1 {
		t.Fatalf("after a's file changed, 1205: a %d, b %d, c %d", ruleCount(a, 1205), ruleCount(b, 1205), ruleCount(c, 1205))
	}
	if a.Retrier().Budget() == b.Retrier().Budget() {
		t.Error("two handles share one retry budget")
	}
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
		_, _, err := New("sqlserver", "", tt.opt, WithPropertiesFile(""))
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "config: ") {
			t.Errorf("error %v, want one naming %s", err, tt.want)
		}
	}
}

func TestBudgetIsReadAtStart(t *testing.T) {
	f := newReloadFixture(t, "retryBudget=max=5\nretryExec={1205:1,1}\n")
	b := f.rt.Retrier().Budget()
	if b == nil || b.Available() != 5 {
		t.Fatalf("budget %v", b)
	}
	f.file.write("retryBudget=off\nretryExec={1205:2,1}\n")
	f.due(t)
	if ruleCount(f.rt, 1205) != 2 {
		t.Fatal("the edit did not take effect")
	}
	if c := f.rt.Config(); c.NoBudget || c.Budget.Max != 5 || f.rt.Retrier().Budget() != b {
		t.Errorf("the budget changed without a restart: %+v", c)
	}
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
	t.Chdir(dir)
	t.Setenv(EnvProperties, "")
	require.NoError(t, os.WriteFile(DefaultPropertiesFile, []byte("retryExec={1205:2,1}\n"), 0o644))
	for _, d := range []struct{ driver, dsn string }{
		{"sqlserver", "server=h"}, {"mssql", "server=h"}, {"azuresql", "server=h"},
	} {
		rt, _, err := New(d.driver, d.dsn)
		require.NoError(t, err)
		assert.NotEmpty(t, rt.PropertiesPath(), d.driver)
		assert.Equal(t, 2, ruleCount(rt, 1205), d.driver)
	}
	for _, d := range []struct{ driver, dsn string }{
		{"mysql", "u@tcp(h)/db"}, {"pgx", "host=h"}, {"postgres", "postgres://u@h/db"},
	} {
		rt, _, err := New(d.driver, d.dsn)
		require.NoError(t, err)
		assert.Empty(t, rt.PropertiesPath(), d.driver)
		assert.Equal(t, -1, ruleCount(rt, 1205), "%s took the SQL Server file's rules", d.driver)
	}
	given := newPropertiesFile(t, "retryExec={1205:4,1}\n")
	rt, _, err := New("mysql", "u@tcp(h)/db?retryProperties="+given.path)
	require.NoError(t, err)
	assert.Equal(t, 4, ruleCount(rt, 1205), "retryProperties")
	rt, _, err = New("pgx", "host=h", WithPropertiesFile(given.path))
	require.NoError(t, err)
	assert.Equal(t, 4, ruleCount(rt, 1205), "WithPropertiesFile")
	t.Setenv(EnvProperties, given.path)
	rt, _, err = New("pgx", "host=h")
	require.NoError(t, err)
	assert.Equal(t, 4, ruleCount(rt, 1205), EnvProperties)
}

// TestAzureConnectRetryCount: as the JDBC driver, a SQL Server DSN that
// names an Azure SQL server gets connectRetryCount 2 and a Synapse
// serverless endpoint 5, unless code, the DSN or the properties file set
// it (issue 11, item 8).
func TestAzureConnectRetryCount(t *testing.T) {
	t.Setenv(EnvProperties, "")
	t.Chdir(t.TempDir())
	count := func(driver, dsn string, opts ...Option) int {
		t.Helper()
		rt, _, err := New(driver, dsn, opts...)
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
		{"mssql", "odbc:server={myserver.database.chinacloudapi.cn};database=d", 0}, // not an Azure domain
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
	rt, _, err := New("sqlserver", azure+"&loginTimeout=60", WithClock(clock), WithoutRetryBudget())
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
