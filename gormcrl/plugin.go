package gormcrl

import (
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"gorm.io/gorm"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/tables/family"
)

// PluginName is the name the plugin registers under in gorm.Config.Plugins
// and the prefix of its callbacks.
const PluginName = "crl:retry"

// Plugin is the GORM plugin that New returns and Open registers. Its
// Initialize registers callbacks on the query, row, raw, create, update
// and delete processors; initializing a plugin again on the same DB
// registers nothing more, so nothing runs twice. A Plugin builds its
// configuration (a config.Runtime: the rules, the retry budget, the
// properties file) on its first Initialize and keeps it; use one Plugin
// per *gorm.DB. The callbacks use the plugin found under PluginName in
// db.Plugins, so the one registered last is in effect.
type Plugin struct {
	opts []Option

	mu      sync.Mutex // held by Initialize
	runtime atomic.Pointer[config.Runtime]

	// The plugins of the other handles that Open opened with a copy of
	// this handle's gorm.Config (whose map of plugins is this one's), by
	// their pool: gorm.io/plugin/dbresolver opens each source and replica
	// so. A statement on one of those pools is retried with its own
	// handle's settings (forPool).
	pools    sync.Map // gorm.ConnPool → *Plugin
	hasPools atomic.Bool
}

var _ gorm.Plugin = (*Plugin)(nil)

// New returns the retry plugin, for db.Use(gormcrl.New(...)):
//
//	db.Use(gormcrl.New(gormcrl.WithRetryExec("{1205,1222:3,100ms*2}")))
//
// The settings are read, in this order of precedence, from opts, from the
// DSN of the DB's dialector when it has one this package can read (an
// exported DSN field, as gorm.io/driver/sqlserver, mysql, postgres and
// most other dialectors have; see Open), from the properties file, and
// the defaults. New does not wrap the connections of a DB that is already
// open, so the connection loop does not apply; Open does that.
//
// The *Plugin is a gorm.Plugin; keep it to reach its retry engine and
// configuration once db.Use has initialized it:
//
//	p := gormcrl.New(opts...)
//	err := db.Use(p)
//	retrier := p.Retrier() // nil before Use
func New(opts ...Option) *Plugin {
	return &Plugin{opts: opts}
}

// Name returns PluginName.
func (p *Plugin) Name() string { return PluginName }

// Runtime returns the configuration at run time, or nil before the first
// Initialize.
func (p *Plugin) Runtime() *config.Runtime { return p.runtime.Load() }

// Retrier returns the retry engine, or nil before the first Initialize.
func (p *Plugin) Retrier() *core.Retrier {
	if rt := p.runtime.Load(); rt != nil {
		return rt.Retrier()
	}
	return nil
}

// Initialize builds the configuration on the first call and registers the
// callbacks. It is idempotent: callbacks already registered are left as
// they are, never doubled.
//
// Retries live in the driver layer, so the plugin needs a pool crl opened.
// Over a DB whose dialector opened its pool from a DSN of a family crl
// knows (sqlserver, mysql, postgres), Initialize opens the pool again
// through the driver layer, as Open does, puts it in place of GORM's and
// closes GORM's. Over any other pool (a dialector given a Conn of the
// user's, SQLite, …) everything runs once, exactly as GORM without the
// plugin; settings given to New are then refused with an error naming
// crl.OpenDB, the way to open such a pool under crl, and an observer
// given alone (config.WithObserver) is told once that nothing there is
// retried (config.ForeignPool).
func (p *Plugin) Initialize(db *gorm.DB) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runtime.Load() == nil {
		rt, err := p.adopt(db)
		if err != nil {
			return err
		}
		p.runtime.Store(rt)
	}
	return p.register(db)
}

// adopt returns the Runtime of the plugin over db's pool, opening the pool
// through the driver layer when db's dialector says how (see Initialize).
func (p *Plugin) adopt(db *gorm.DB) (*config.Runtime, error) {
	form, dsn := dialectorDSN(db.Dialector)
	if _, layered := poolRuntime(db.ConnPool); layered {
		rt, _, err := newRuntime(form, dsn, p.opts)
		return rt, err
	}
	if d, ok := reopenable(db.Dialector); ok {
		inner, rt, pool, err := withConnectionLoop(d, p.opts)
		if err != nil {
			return nil, err
		}
		if err := swapPool(db, pool); err != nil {
			return nil, err
		}
		db.Dialector = inner
		return rt, nil
	}
	if err := refuseSettings(db, p.opts); err != nil {
		return nil, err
	}
	rt, _, err := newRuntime(form, "", nil)
	return rt, err
}

// refuseSettings applies config.ForeignPool to opts, given for db's pool,
// which crl did not open: settings are refused (nothing there is
// retried, so they would be silently ignored) with an error naming them
// and crl.OpenDB; an observer alone is told, once, that nothing on the
// pool is retried.
func refuseSettings(db *gorm.DB, opts []Option) error {
	return config.ForeignPool("gormcrl", fmt.Sprintf("the %s pool (%T)", db.Dialector.Name(), db.ConnPool), opts...)
}

// reopenable returns db's dialector when the plugin may open its pool
// again through the driver layer: a family crl knows, a DSN, and no Conn
// of the user's.
func reopenable(d gorm.Dialector) (gorm.Dialector, bool) {
	if w, ok := d.(*dialector); ok {
		d = w.Dialector
	}
	if d == nil || family.Of(d.Name()) == family.Other {
		return nil, false
	}
	cp, f, ok := copyDialector(d)
	if !ok || !f.conn.IsNil() {
		return nil, false
	}
	_, _, dsn := f.settings(d.Name())
	dropOwnTimeZoneOption(f, dsn)
	return cp, dsn != ""
}

// dropOwnTimeZoneOption clears, in the copy f belongs to, the one
// OptionOpenDB that gorm.io/driver/postgres's Initialize appends to its
// own Config for a DSN's TimeZone (it sets the scan location of timestamp
// without time zone, which crl's pool over pgx's registered driver cannot
// take; see docs/gorm.md): what Initialize added is not the user's.
func dropOwnTimeZoneOption(f poolFields, dsn string) {
	o, ok := directField(f.holder, "OptionOpenDB")
	if ok && o.Kind() == reflect.Slice && o.Len() == 1 &&
		(strings.Contains(dsn, "TimeZone=") || strings.Contains(dsn, "time_zone=")) {
		o.Set(reflect.Zero(o.Type()))
	}
}

// swapPool puts pool, opened through the driver layer, in place of db's
// own *sql.DB (under GORM's prepared-statement layer, if any) and closes
// the one it replaces.
func swapPool(db *gorm.DB, pool *sql.DB) error {
	var old gorm.ConnPool
	if ps, ok := db.ConnPool.(*gorm.PreparedStmtDB); ok {
		old, ps.ConnPool = ps.ConnPool, pool
	} else {
		old, db.ConnPool = db.ConnPool, pool
		if db.Statement != nil {
			db.Statement.ConnPool = pool
		}
	}
	if c, ok := old.(interface{ Close() error }); ok {
		if err := c.Close(); err != nil {
			return fmt.Errorf("gormcrl: close GORM's own pool, replaced by crl's: %w", err)
		}
	}
	return nil
}

// retrier is the engine of the plugin.
func (p *Plugin) retrier() *core.Retrier { return p.runtime.Load().Retrier() }

// active returns the plugin in effect for db: the one registered under
// PluginName (db.Use, Open), else p, the one whose callbacks run.
func (p *Plugin) active(db *gorm.DB) *Plugin {
	if q, ok := db.Plugins[PluginName].(*Plugin); ok && q != p && q.runtime.Load() != nil {
		return q
	}
	return p
}

// addPool makes q the plugin of the statements that run on pool.
func (p *Plugin) addPool(pool gorm.ConnPool, q *Plugin) {
	if pool == nil || q == p {
		return
	}
	p.pools.Store(pool, q)
	p.hasPools.Store(true)
}

// forPool returns the plugin whose settings retry a statement on pool: the
// plugin of the handle that opened the pool, when it is one of p's pools
// (see addPool), else p.
func (p *Plugin) forPool(pool gorm.ConnPool) *Plugin {
	if !p.hasPools.Load() {
		return p
	}
	if ps, ok := pool.(*gorm.PreparedStmtDB); ok { // PrepareStmt: GORM's layer over the pool
		pool = ps.ConnPool
	}
	if q, ok := p.pools.Load(pool); ok {
		return q.(*Plugin)
	}
	return p
}

// register puts the callbacks on the processors.
func (p *Plugin) register(db *gorm.DB) error {
	var errs []error
	for _, c := range p.callbacks(db) {
		// A callback already there stays: GORM's Replace would lose its
		// place (a replacement keeps no Before/After), and the callbacks
		// find the plugin in db.Plugins when they run (see active), so the
		// one registered last is the one in effect.
		if c.get(c.name) != nil {
			continue
		}
		if err := c.register(c.name, c.fn); err != nil {
			errs = append(errs, fmt.Errorf("gormcrl: register callback %s: %w", c.name, err))
		}
	}
	// Query, Create, Update, Delete: the statement callback's whole run,
	// rows read included (see attempt.go).
	if err := p.wrapStatements(db); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// callback is one callback the plugin registers: its name, where it goes
// (register, a processor's Before/After chain) and its function.
type callback struct {
	get      func(string) func(*gorm.DB)
	register func(string, func(*gorm.DB)) error
	name     string
	fn       func(*gorm.DB)
}

// callbacks returns every callback the plugin registers on db's
// processors (the table of doc.go says what each does).
func (p *Plugin) callbacks(db *gorm.DB) []callback {
	cb := db.Callback()
	c, u, d := cb.Create(), cb.Update(), cb.Delete()
	cu := &unitCallbacks{plugin: p, op: opCreate, execute: c.Execute}
	uu := &unitCallbacks{plugin: p, op: opUpdate, execute: u.Execute}
	du := &unitCallbacks{plugin: p, op: opDelete, execute: d.Execute}
	return []callback{
		// Create, Update, Delete: the whole unit of GORM's implicit
		// transaction (see unit.go). Without that transaction
		// (SkipDefaultTransaction) each statement commits on its own and
		// is retried alone.
		{c.Get, c.Before("*").Register, "crl:unit_start", cu.start},
		{c.Get, c.Before("gorm:before_create").Register, "crl:unit_tx", watchTx},
		{c.Get, c.Before("gorm:commit_or_rollback_transaction").Register, "crl:unit_commit", watchCommit},
		{c.Get, c.After("*").Register, "crl:unit_end", cu.end},
		{u.Get, u.Before("*").Register, "crl:unit_start", uu.start},
		{u.Get, u.Before("gorm:setup_reflect_value").Register, "crl:unit_tx", watchTx},
		{u.Get, u.Before("gorm:commit_or_rollback_transaction").Register, "crl:unit_commit", watchCommit},
		{u.Get, u.After("*").Register, "crl:unit_end", uu.end},
		{d.Get, d.Before("*").Register, "crl:unit_start", du.start},
		{d.Get, d.Before("gorm:before_delete").Register, "crl:unit_tx", watchTx},
		{d.Get, d.Before("gorm:commit_or_rollback_transaction").Register, "crl:unit_commit", watchCommit},
		{d.Get, d.After("*").Register, "crl:unit_end", du.end},
	}
}

// pluginOf returns the plugin registered on db.
func pluginOf(db *gorm.DB) (*Plugin, bool) {
	if db == nil || db.Config == nil {
		return nil, false
	}
	p, ok := db.Plugins[PluginName].(*Plugin)
	if !ok || p.runtime.Load() == nil {
		return nil, false
	}
	return p, true
}
