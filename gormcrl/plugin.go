package gormcrl

import (
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"gorm.io/gorm"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

// PluginName is the name the plugin registers under in gorm.Config.Plugins
// and the prefix of its callbacks.
const PluginName = "crl:retry"

// ErrNoPlugin is returned by Transaction for a *gorm.DB without the plugin.
var ErrNoPlugin = errors.New("gormcrl: this *gorm.DB has neither a pool crl opened nor the " + PluginName + " plugin; open its pool with crl.Open or gormcrl.Open, or call db.Use(gormcrl.New(...))")

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
	shared  atomic.Pointer[retryPool] // the statement pool over a *sql.DB (statementPool)

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
func (p *Plugin) Initialize(db *gorm.DB) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runtime.Load() == nil {
		form, dsn := dialectorDSN(db.Dialector)
		rt, _, err := newRuntime(form, dsn, p.opts)
		if err != nil {
			return err
		}
		p.runtime.Store(rt)
	}
	return p.register(db)
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
	q, row, raw := cb.Query(), cb.Row(), cb.Raw()
	c, u, d := cb.Create(), cb.Update(), cb.Delete()
	cu := &unitCallbacks{plugin: p, op: opCreate, execute: c.Execute}
	uu := &unitCallbacks{plugin: p, op: opUpdate, execute: u.Execute}
	du := &unitCallbacks{plugin: p, op: opDelete, execute: d.Execute}
	return []callback{
		// Query, Row, Raw: each statement under the statement loop (over
		// a pool crl did not open: retryPool).
		{q.Get, q.Before("gorm:query").Register, "crl:retry_pool", p.installPool},
		{q.Get, q.After("*").Register, "crl:restore_pool", restorePool},
		{row.Get, row.Before("gorm:row").Register, "crl:retry_pool", p.installPool},
		{row.Get, row.After("*").Register, "crl:restore_pool", restorePool},
		{raw.Get, raw.Before("gorm:raw").Register, "crl:retry_pool", p.installPool},
		{raw.Get, raw.After("*").Register, "crl:restore_pool", restorePool},

		// Create, Update, Delete: the whole unit of GORM's implicit
		// transaction (see unit.go). Without that transaction
		// (SkipDefaultTransaction) each statement commits on its own and
		// is retried alone.
		{c.Get, c.Before("*").Register, "crl:unit_start", cu.start},
		{c.Get, c.Before("gorm:before_create").Register, "crl:unit_tx", watchTx},
		{c.Get, c.Before("gorm:create").Register, "crl:retry_pool", p.installPool},
		{c.Get, c.After("*").Register, "crl:unit_end", cu.end},
		{u.Get, u.Before("*").Register, "crl:unit_start", uu.start},
		{u.Get, u.Before("gorm:setup_reflect_value").Register, "crl:unit_tx", watchTx},
		{u.Get, u.Before("gorm:update").Register, "crl:retry_pool", p.installPool},
		{u.Get, u.After("*").Register, "crl:unit_end", uu.end},
		{d.Get, d.Before("*").Register, "crl:unit_start", du.start},
		{d.Get, d.Before("gorm:before_delete").Register, "crl:unit_tx", watchTx},
		{d.Get, d.Before("gorm:delete").Register, "crl:retry_pool", p.installPool},
		{d.Get, d.After("*").Register, "crl:unit_end", du.end},

		// A statement that GORM's prepared-statement layer runs in a
		// recorded transaction: its outcome is recorded around the
		// statement's own callback, before any later callback (hooks,
		// associations, preloads) adds errors of its own (see
		// markPrepared).
		{q.Get, q.Before("gorm:query").Register, "crl:tx_prepared", markPrepared},
		{q.Get, q.After("gorm:query").Before("gorm:preload").Register, "crl:tx_prepared_end", recordPrepared},
		{row.Get, row.Before("gorm:row").Register, "crl:tx_prepared", markPrepared},
		{row.Get, row.After("gorm:row").Register, "crl:tx_prepared_end", recordPrepared},
		{raw.Get, raw.Before("gorm:raw").Register, "crl:tx_prepared", markPrepared},
		{raw.Get, raw.After("gorm:raw").Register, "crl:tx_prepared_end", recordPrepared},
		{c.Get, c.Before("gorm:create").Register, "crl:tx_prepared", markPrepared},
		{c.Get, c.After("gorm:create").Before("gorm:save_after_associations").Register, "crl:tx_prepared_end", recordPrepared},
		{u.Get, u.Before("gorm:update").Register, "crl:tx_prepared", markPrepared},
		{u.Get, u.After("gorm:update").Before("gorm:save_after_associations").Register, "crl:tx_prepared_end", recordPrepared},
		{d.Get, d.Before("gorm:delete").Register, "crl:tx_prepared", markPrepared},
		{d.Get, d.After("gorm:delete").Before("gorm:after_delete").Register, "crl:tx_prepared_end", recordPrepared},
	}
}

// installPool puts the statement loop on a statement outside any
// transaction, unless it opted out.
func (p *Plugin) installPool(db *gorm.DB) {
	stmt := db.Statement
	if db.Error != nil || db.DryRun || !poolRetriesStatements(stmt.ConnPool) || propagateNoRetry(stmt) {
		return
	}
	if _, ok := unwrapPool(stmt.ConnPool); ok { // a nested statement of a retried one
		return
	}
	if _, layered := poolRuntime(stmt.ConnPool); layered {
		return // crl's driver layer retries the statement; the ConnPool stays GORM's
	}
	stmt.ConnPool = p.active(db).forPool(stmt.ConnPool).statementPool(stmt.ConnPool)
}

// statementPool returns inner under p's statement loop. The pool over a
// *sql.DB, which nearly every statement outside a transaction has, is
// made once and shared, so that a statement's success path allocates
// nothing; it is made again only when the DB's pool or the plugin's
// retrier is another one than last time.
func (p *Plugin) statementPool(inner gorm.ConnPool) gorm.ConnPool {
	r := p.retrier()
	if _, ok := inner.(*sql.DB); !ok {
		return newRetryPool(inner, r).asPool()
	}
	rp := p.shared.Load()
	if rp == nil || rp.inner != inner || rp.retrier != r {
		rp = newRetryPool(inner, r)
		p.shared.Store(rp)
	}
	return rp.asPool()
}

// restorePool takes the statement loop off the statement, so that a
// *gorm.DB reused after this operation sees its own pool. A statement
// that inherited the loop from one still running (a Session made in a
// hook) takes it off its own copy only.
func restorePool(db *gorm.DB) {
	if rp, ok := unwrapPool(db.Statement.ConnPool); ok {
		db.Statement.ConnPool = rp.inner
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
