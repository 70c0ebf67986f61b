package config

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/tables/family"
)

// Runtime is the configuration of one database handle at run time: its
// core.Retrier, and the properties file it keeps looking at. Each handle
// has its own Runtime; nothing is shared between them. It is safe for
// concurrent use.
type Runtime struct {
	retrier  *core.Retrier
	breaker  *core.Breaker // nil when off
	family   family.Family // of the driver, or as WithDriverFamily names it
	fixed    Config        // code over DSN: what the file cannot override
	defaults Config        // below the file: the JDBC driver's Azure connectRetryCount, when the DSN names an Azure endpoint
	start    Config        // the settings read only at start (startOnly), as in effect: only a restart changes them
	cutoff   time.Duration
	replay   int    // the transaction replay's statement limit; 0: off
	path     string // absolute; "" when there is no file
	clock    core.Clock
	observer core.Observer
	current  atomic.Pointer[Config] // fixed over the last good file

	// For a DSN given to the pool's Driver (ForDSN): the driver name
	// whose DSN forms it is read in (familyDriver's), and the options in
	// code.
	driverName string
	code       Config

	interval  atomic.Int64 // nanoseconds between looks at the file; ≤ 0: never
	nextCheck atomic.Int64 // unix nanoseconds of the next look

	faults atomic.Pointer[faults] // injected into the pool (AddFault); nil without one

	mu       sync.Mutex  // held by the one goroutine that looks at the file
	applied  contentHash // of the content in effect, or last reported bad
	pending  contentHash // of a changed content without a final line end, seen at the last look
	reported bool        // the file's absence was reported
}

// contentHash identifies a version of the file by its content, so that a
// rewrite of the same size within one tick of the file system's clock is
// still seen. The zero value is "none".
type contentHash [sha256.Size]byte

func hashContent(data []byte) contentHash {
	if len(data) == 0 {
		return contentHash{}
	}
	return sha256.Sum256(data)
}

// familyDriver returns the driver name whose DSN forms a handle of
// driverName reads: driverName itself, or, when WithDriverFamily names
// the family, that family's (family.Family.Driver).
func familyDriver(driverName, fam string) (string, error) {
	if fam == "" {
		return driverName, nil
	}
	f, ok := family.Parse(fam)
	if !ok {
		return "", &ValueError{Source: "option", Key: nameDriverFamily, Value: fam,
			Reason: "expected the name of a family or of its driver: " + family.Spellings(), Err: ErrInvalidValue}
	}
	return f.Driver(), nil
}

// NewRuntime builds the Runtime of one database handle and returns it with the
// DSN for the driver (dsn without the retry settings; see ParseDSN).
// Settings are layered code (opts) > DSN > properties file > defaults. As
// in the JDBC driver, the default connectRetryCount is 2 for an Azure SQL
// server (*.database.windows.net and its sovereign clouds) and 5 for a
// Synapse serverless (-ondemand) endpoint named by a SQL Server DSN.
//
// The properties file is the one given by WithPropertiesFile or the DSN's
// retryProperties, else the one that $CRL_PROPERTIES names (such a file
// must exist), else, for a SQL Server handle only (driverName sqlserver,
// mssql or azuresql), mssql-jdbc.properties in the working directory or
// next to the executable when there is one. A file that does not parse is an
// error naming the line. The file is then looked at lazily, when a
// statement or connection starts, at most every retryRefresh.
func NewRuntime(driverName, dsn string, opts ...Option) (*Runtime, string, error) {
	code := NewConfig(opts...)
	if err := code.validate("option"); err != nil {
		return nil, "", err
	}
	driverName, err := familyDriver(driverName, code.DriverFamily)
	if err != nil {
		return nil, "", err
	}
	return newRuntime(driverName, code, dsn)
}

// newRuntime is NewRuntime for the options code, valid, and the name of
// the driver whose DSN forms dsn is read in.
func newRuntime(driverName string, code Config, dsn string) (*Runtime, string, error) {
	d, err := readDSN(driverName, dsn)
	if err != nil {
		return nil, "", err
	}
	r := &Runtime{driverName: driverName, code: code, family: family.Of(driverName),
		fixed: code.over(d.config), clock: code.Clock, observer: code.Observer}
	if n := azureConnectRetryCount(d.server); n > 0 {
		r.defaults = Config{ConnectRetryCount: n}
	}
	path, err := findProperties(r.fixed.PropertiesPath, driverName)
	if err != nil {
		return nil, "", err
	}
	r.path = path
	file, err := r.readFirst()
	if err != nil {
		return nil, "", err
	}
	if err := r.startWith(r.fixed.over(file).over(r.defaults)); err != nil {
		return nil, "", err
	}
	return r, d.driverDSN, nil
}

// readFirst reads the properties file at r.path, if any, when the
// runtime is made, and notes its content as applied.
func (r *Runtime) readFirst() (Config, error) {
	if r.path == "" {
		return Config{}, nil
	}
	data, err := readFile(r.path)
	if err != nil {
		return Config{}, &FileError{Path: r.path, Err: err}
	}
	file, err := ParseProperties(r.path, data)
	if err != nil {
		return Config{}, err
	}
	r.applied = hashContent(data)
	return file, nil
}

// startWith makes the retrier, budget and breaker of merged, the settings the
// runtime starts with.
func (r *Runtime) startWith(merged Config) error {
	policy, err := merged.Policy()
	if err != nil {
		return err
	}
	r.start = startOnlyOf(merged)
	o := core.Options{Clock: r.clock, Observer: r.observer, NoRetry: NoRetry}
	if !merged.NoBudget {
		if o.Budget, err = core.NewBudget(merged.Budget); err != nil {
			return err
		}
	}
	if o.Breaker, err = core.NewBreaker(merged.Breaker, r.clock); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	r.breaker = o.Breaker
	if r.path != "" && merged.RefreshInterval() > 0 {
		o.Refresh = r.refresh
	}
	r.cutoff = merged.Cutoff()
	r.replay = merged.ReplayLimit()
	r.current.Store(&merged)
	r.setInterval(merged.RefreshInterval(), r.now())
	if r.retrier, err = core.NewRetrier(policy, o); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// ExecutionCutoff returns the server-side execution cut-off that new
// connections get (zero: none). It is read at start: the adapters set it on
// each new connection.
func (r *Runtime) ExecutionCutoff() time.Duration { return r.cutoff }

// TxReplayLimit returns how many statements a transaction of the pool
// records for its replay (txReplayLimit), read at start; zero when replay
// is off (txReplay=off).
func (r *Runtime) TxReplayLimit() int { return r.replay }

// Retrier returns the retrier that the adapters run statements and
// connections with. Its policy changes when the properties file does.
func (r *Runtime) Retrier() *core.Retrier { return r.retrier }

// DriverFamily returns the handle's database family: "sqlserver",
// "mysql" (MariaDB too), "postgres", or "other" for a driver crl does not
// know; its driver's, or the one WithDriverFamily names.
func (r *Runtime) DriverFamily() string { return r.family.String() }

// Breaker returns the handle's circuit breaker, nil when it is off (the
// default), for a hook that shows its state (WatchBreaker of
// hooks/prometheus and hooks/otel; their WatchBudget takes
// Retrier().Budget()).
func (r *Runtime) Breaker() *core.Breaker { return r.breaker }

// PropertiesPath returns the absolute path of the properties file in use,
// or "" when there is none.
func (r *Runtime) PropertiesPath() string { return r.path }

// Config returns the settings in effect now: code over DSN over the last
// good properties file. Unset fields mean the defaults.
func (r *Runtime) Config() Config { return *r.current.Load() }

// Reload reads the properties file now, whatever its content and
// retryRefresh (a file without a final line end included), and swaps its
// rules in; on failure it keeps the last good
// rules and returns the error. A file that changes a key read only at
// start is applied but for that key, and the error matches
// ErrRestartRequired. Either way it emits core.RulesReloaded. It
// is for a SIGHUP handler or a test; without it, the file is looked at
// lazily.
func (r *Runtime) Reload() error {
	if r.path == "" {
		return nil
	}
	r.mu.Lock()
	ev, changed := r.look(true)
	r.mu.Unlock()
	if changed {
		r.emit(ev)
	}
	return ev.Err
}

// refresh is core.Options.Refresh, called when every operation starts: a
// clock read and an atomic load when nothing is due, no lock and no
// allocation. The goroutine that wins the compare-and-swap on the next
// check time looks at the file; the others go on with the rules in effect.
func (r *Runtime) refresh() {
	now := r.now().UnixNano()
	next := r.nextCheck.Load()
	if now < next {
		return
	}
	iv := r.interval.Load()
	if iv <= 0 || !r.nextCheck.CompareAndSwap(next, addSaturating(now, iv)) {
		return
	}
	if !r.mu.TryLock() { // a slow look still runs
		return
	}
	ev, changed := r.look(false)
	r.mu.Unlock()
	if changed {
		r.emit(ev)
	}
}

// look reads the file and, when its content changed (or force), parses it
// and swaps the policy. It reports the event to emit, if any. r.mu is held.
//
// A write in progress must never apply a prefix of the new content
// ("queryTimeout=3" of "queryTimeout=30", or a lone "retryExec"): a changed
// content is applied at once only when it ends with a line end, otherwise
// only when the next look finds the same content again. An empty file is a
// write in progress (an editor truncates, then writes).
func (r *Runtime) look(force bool) (core.RulesReloaded, bool) {
	ev := core.RulesReloaded{Path: r.path}
	data, err := readFile(r.path)
	if err != nil {
		r.pending = contentHash{}
		if r.reported && !force {
			return ev, false
		}
		r.reported = true
		r.applied = contentHash{}
		if errors.Is(err, fs.ErrNotExist) {
			ev.Err = &FileError{Path: r.path, Err: fmt.Errorf("the properties file was deleted; the last rules stay in effect: %w", err)}
		} else {
			ev.Err = &FileError{Path: r.path, Err: fmt.Errorf("the properties file cannot be read; the last rules stay in effect: %w", err)}
		}
		return ev, true
	}
	r.reported = false
	h := hashContent(data)
	if !force {
		if h == r.applied {
			r.pending = contentHash{}
			return ev, false
		}
		if len(data) == 0 {
			return ev, false // look again at the next check
		}
		if !endsWithLineEnd(data) && h != r.pending {
			r.pending = h // apply it if the next look finds it unchanged
			return ev, false
		}
	}
	r.applied, r.pending = h, contentHash{} // a bad version is reported once, not at every look
	file, err := ParseProperties(r.path, data)
	if err == nil {
		err = r.apply(file)
	}
	if err != nil {
		ev.Err = err
		var fe *FileError
		if errors.As(err, &fe) {
			ev.Line = fe.Line
		}
	}
	return ev, true
}

func endsWithLineEnd(data []byte) bool {
	last := data[len(data)-1]
	return last == '\n' || last == '\r'
}

// apply swaps in the policy of fixed over file. The settings read only at
// start (the retry budget and the circuit breaker are built once; the
// execution cut-off is set on each new connection from the value read at
// start) keep their values: a changed line of one of them is reported as
// ErrRestartRequired, naming the keys, once the other keys are applied.
func (r *Runtime) apply(file Config) error {
	wanted := r.fixed.over(file).over(r.defaults)
	merged := r.start.over(wanted)
	policy, err := merged.Policy()
	if err == nil {
		err = r.retrier.SetPolicy(policy)
	}
	if err != nil {
		return &FileError{Path: r.path, Err: err}
	}
	r.current.Store(&merged)
	r.setInterval(merged.RefreshInterval(), r.now())
	if keys := changedStartOnly(r.start, wanted); len(keys) > 0 {
		return &FileError{Path: r.path, Err: fmt.Errorf("%w: %s changed, but is read only at start; the other settings were applied",
			ErrRestartRequired, strings.Join(keys, ", "))}
	}
	return nil
}

// startOnlyOf returns the settings of c that are read only at start, each
// marked set, so that they take precedence over any other source.
func startOnlyOf(c Config) Config {
	var out Config
	for i := range settings {
		if settings[i].startOnly {
			settings[i].take(&out, &c)
			out.set |= 1 << i
		}
	}
	return out
}

// changedStartOnly returns the keys read only at start whose value in
// wanted differs from the value in effect.
func changedStartOnly(inEffect, wanted Config) []string {
	var keys []string
	for i := range settings {
		if !settings[i].startOnly {
			continue
		}
		var a, b Config
		settings[i].take(&a, &inEffect)
		settings[i].take(&b, &wanted)
		if a != b {
			keys = append(keys, settings[i].key)
		}
	}
	return keys
}

// setInterval sets how often the file is looked at, from now on.
func (r *Runtime) setInterval(d time.Duration, now time.Time) {
	if r.path == "" {
		d = -1
	}
	r.interval.Store(int64(d))
	if d <= 0 {
		r.nextCheck.Store(math.MaxInt64)
		return
	}
	r.nextCheck.Store(addSaturating(now.UnixNano(), int64(d)))
}

func (r *Runtime) emit(ev core.RulesReloaded) {
	if r.observer != nil {
		r.observer.RulesReloaded(ev)
	}
}

// readFile reads the properties file whole.
func readFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%s is a directory, expected a properties file", path)
	}
	return os.ReadFile(path)
}

func addSaturating(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// now is the time by the handle's clock: code's (WithClock), else the
// real time.
func (r *Runtime) now() time.Time {
	if r.clock == nil {
		return time.Now()
	}
	return r.clock.Now()
}

// ForDSN returns the Runtime of another handle with r's driver name and
// options in code, for dsn, and the DSN for the driver (dsn without
// crl's keys): the driver layer reads a DSN given to a pool's Driver
// (DB.Driver().Open, OpenConnector) with it, as the pool's opener read
// its own.
func (r *Runtime) ForDSN(dsn string) (*Runtime, string, error) {
	return newRuntime(r.driverName, r.code, dsn)
}
