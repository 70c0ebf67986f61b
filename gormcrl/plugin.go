package gormcrl

import (
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"gorm.io/gorm"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

// PluginName is the name the plugin registers under in gorm.Config.Plugins
// and the prefix of its callbacks.
const PluginName = "crl:retry"

// Plugin is the GORM plugin that New returns and Open registers. Its
// Initialize registers the callbacks of the implicit transaction's unit
// on the create, update and delete processors (unit.go) and NoRetry's on
// the query, row and raw processors; initializing a plugin again on the
// same DB registers nothing more, so nothing runs twice. The statements
// themselves are retried by the driver layer of the pool crl opened, and
// a unit by that pool's Retrier: its rules, budget and breaker.
type Plugin struct {
	opts []Option

	mu      sync.Mutex // held by Initialize
	runtime atomic.Pointer[config.Runtime]
	// noRetry is set once a statement of a DB whose Plugins hold the plugin
	// was given NoRetry: until then its read callbacks have nothing to do.
	noRetry atomic.Bool
}

var _ gorm.Plugin = (*Plugin)(nil)

// New returns the retry plugin, for db.Use(gormcrl.New(...)):
//
//	db.Use(gormcrl.New(gormcrl.WithRetryExec("{1205,1222:3,100ms*2}")))
//
// The settings are read, in this order of precedence, from opts, from the
// DSN of the DB's dialector (an exported DSN field, as
// gorm.io/driver/sqlserver, mysql and postgres have; see Open), from the
// properties file, and the defaults; they reach the pool that Initialize
// opens again through the driver layer (see Initialize).
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

// Runtime returns the configuration at run time (that of the pool crl
// opened), or nil before the first Initialize.
func (p *Plugin) Runtime() *config.Runtime { return p.runtime.Load() }

// Retrier returns the retry engine, or nil before the first Initialize.
func (p *Plugin) Retrier() *core.Retrier {
	if rt := p.runtime.Load(); rt != nil {
		return rt.Retrier()
	}
	return nil
}

// Initialize takes the configuration on the first call, registers the
// callbacks and puts p in db.Plugins when no plugin of its name is there,
// as db.Use would (NoRetry looks for it there: a direct call honours it
// on reads too). It is idempotent: callbacks already registered are left
// as they are, never doubled.
//
// Retries live in the driver layer, so the plugin needs a pool crl opened.
// Over one (crl.Open's, Open's, OpenDB's) it takes that pool's
// configuration; settings given to New are then an error (give them where
// the pool is opened). Over a DB whose dialector opened its pool from a
// DSN of a family crl knows (sqlserver, mysql, postgres), Initialize
// opens the pool again through the driver layer, as Open does, puts it
// in place of GORM's and closes GORM's. Over any other pool (a dialector
// given a Conn of the user's, SQLite, …) everything runs once, exactly as
// GORM without the plugin; settings given to New are then refused with
// an error naming crl.OpenDB, the way to open such a pool under crl, and
// an observer given alone (config.WithObserver) is told once that nothing
// there is retried (config.ForeignPool).
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
	err := p.register(db)
	if _, ok := db.Plugins[PluginName]; !ok && err == nil && db.Plugins != nil {
		db.Plugins[PluginName] = p
	}
	return err
}

// adopt returns the Runtime of the plugin over db's pool, opening the pool
// through the driver layer when db's dialector says how (see Initialize).
func (p *Plugin) adopt(db *gorm.DB) (*config.Runtime, error) {
	if rt, layered := poolRuntime(db.ConnPool); layered {
		if len(p.opts) > 0 {
			return nil, fmt.Errorf("gormcrl: the settings cannot apply to the %s pool: crl opened it with its own; give them to crl.Open, crl.OpenDB, gormcrl.Open or gormcrl.OpenDB", db.Dialector.Name())
		}
		return rt, nil
	}
	d := db.Dialector
	if w, ok := d.(*dialector); ok {
		d = w.Dialector
	}
	inner, pool, err := withConnectionLoop(d, p.opts, true)
	if err != nil {
		return nil, err
	}
	if pool != nil {
		if err := swapPool(db, pool); err != nil {
			return nil, err
		}
		db.Dialector = inner
		rt, _ := crl.RuntimeOf(pool)
		return rt, nil
	}
	if err := refuseSettings(db, p.opts); err != nil {
		return nil, err
	}
	rt, _, err := newRuntime(dsnForm(db.Dialector.Name(), ""), "", nil)
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

// register puts the callbacks on the processors. A callback already
// there stays: GORM's Replace would lose its place (a replacement keeps no
// Before/After), and the callbacks read what they need from the statement
// when they run.
func (p *Plugin) register(db *gorm.DB) error {
	var errs []error
	add := func(get func(string) func(*gorm.DB), register func(string, func(*gorm.DB)) error, name string, fn func(*gorm.DB)) {
		if get(name) != nil {
			return
		}
		if err := register(name, fn); err != nil {
			errs = append(errs, fmt.Errorf("gormcrl: register callback %s: %w", name, err))
		}
	}
	cb := db.Callback()
	owner := p // db.Use, Open and OpenDB put p in db.Plugins after Initialize
	for _, q := range db.Plugins {
		if q, ok := q.(*Plugin); ok {
			owner = q // one NoRetry marks (dbresolver's sources share the map)
		}
	}
	noRetry := func(db *gorm.DB) {
		if owner.noRetry.Load() {
			propagateNoRetry(db.Statement)
		}
	}
	q, r, raw := cb.Query(), cb.Row(), cb.Raw()
	add(q.Get, q.Before("*").Register, "crl:no_retry", noRetry)
	add(r.Get, r.Before("*").Register, "crl:no_retry", noRetry)
	add(raw.Get, raw.Before("*").Register, "crl:no_retry", noRetry)
	c, u, d := cb.Create(), cb.Update(), cb.Delete()
	addUnit(add, c.Get, c.Before, c.After, c.Execute, opCreate)
	addUnit(add, u.Get, u.Before, u.After, u.Execute, opUpdate)
	addUnit(add, d.Get, d.Before, d.After, d.Execute, opDelete)
	return errors.Join(errs...)
}

// addUnit registers, with add, the callbacks of the unit of one
// processor (unit.go): first, before GORM's COMMIT or ROLLBACK, last.
// C is GORM's unexported callback type, which its Before and After return.
func addUnit[C interface {
	Register(string, func(*gorm.DB)) error
}](add func(func(string) func(*gorm.DB), func(string, func(*gorm.DB)) error, string, func(*gorm.DB)),
	get func(string) func(*gorm.DB), before, after func(string) C, execute func(*gorm.DB) *gorm.DB, op operation) {
	u := &unitCallbacks{op: op, execute: execute}
	add(get, before("*").Register, "crl:unit_start", u.start)
	add(get, before("gorm:commit_or_rollback_transaction").Register, "crl:unit_commit", watchCommit)
	add(get, after("*").Register, "crl:unit_end", u.end)
}
