package gormcrl

import (
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"gorm.io/gorm"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/internal/tables/family"
)

// Open wraps a dialector so that gorm.Open gets the whole of CRL:
//
//	db, err := gorm.Open(gormcrl.Open(sqlserver.Open(dsn)), &gorm.Config{})
//
// It works with any GORM dialector that opens its pool from exported
// fields DSN, DriverName (optional) and Conn (a gorm.ConnPool), on the
// dialector or on its Config, as gorm.io/driver/sqlserver, mysql, postgres
// and the sqlite dialectors have them; it finds them by reflection and
// imports no driver, so a program links only the drivers it imports
// itself. For such a dialector, the retry settings are read from the DSN
// (retryExec, retryConn, connectRetryCount, … are removed before the driver
// sees it; the DSN is read as the form of the dialector's Name: sqlserver,
// mysql or postgres) and the dialector gets, as its Conn, a *sql.DB on the
// registered driver whose every new pooled connection runs the connection
// loop, so the open path (Initialize, GORM's automatic ping) and every later
// connection are retried as the JDBC driver retries them. The driver is
// DriverName, else the dialector's default (sqlserver, mysql, pgx for
// postgres, sqlite or sqlite3). A dialector that already has a Conn keeps
// it (its connections are not wrapped); one of another shape only gets the
// plugin. See docs/gorm.md for what differs from the postgres dialector's
// own pool (the scan location of timestamp without time zone).
//
// When gorm.Open initializes it, the plugin (see New) is registered with
// the same settings (it replaces one registered under the same name), and
// db.Dialector becomes the driver's own dialector (a copy of d whose Conn
// is the retrying pool), so code that type-asserts db.Dialector to
// *mysql.Dialector or postgres.Dialector keeps working. Configuration errors
// (a malformed rule in the DSN or in opts) are returned by gorm.Open. d
// itself is never changed: the value Open returns may be passed to
// gorm.Open more than once, each time with a pool of its own.
func Open(d gorm.Dialector, opts ...Option) gorm.Dialector {
	return &dialector{Dialector: d, opts: opts}
}

// dialector is the dialector Open returns. gorm.Open calls its Apply and
// Initialize; from then on db.Dialector is the driver's own.
type dialector struct {
	gorm.Dialector // the caller's, never changed
	opts           []Option
}

var _ interface{ Apply(*gorm.Config) error } = (*dialector)(nil) // GORM's hook; Open's result says it is a gorm.Dialector

// Initialize gives a copy of the wrapped dialector a connection pool that
// runs the connection loop, initializes it, registers the plugin and puts
// the copy in db.Dialector.
func (d *dialector) Initialize(db *gorm.DB) error {
	if nilDialector(d.Dialector) {
		return errors.New("gormcrl: Open: the dialector is nil")
	}
	inner, pool, err := withConnectionLoop(d.Dialector, d.opts, false)
	if err != nil {
		return err
	}
	return initialize(db, inner, pool, d.opts)
}

// initialize is the end of Open's and OpenDB's Initialize: it initializes
// inner, the copy of the caller's dialector over pool (nil when the
// dialector keeps a pool of its own), registers a plugin over db's pool
// (the first one registered on db's plugins stays in effect: dbresolver
// opens its sources and replicas with a copy of the main handle's
// gorm.Config, and each pool's own Runtime retries what runs on it), and
// puts inner in db.Dialector. On an error, a pool that GORM did not take
// is closed, and a Conn of the caller's is kept out of GORM's sight.
func initialize(db *gorm.DB, inner gorm.Dialector, pool *sql.DB, opts []Option) error {
	if err := inner.Initialize(db); err != nil {
		if pool != nil && db.ConnPool != pool { // gorm.Open closes only the pool it sees
			if cerr := pool.Close(); cerr != nil {
				return errors.Join(err, fmt.Errorf("gormcrl: close the pool after the error above: %w", cerr))
			}
		}
		return err
	}
	p := New(opts...)
	if pool != nil {
		p.opts = nil // crl opened the pool with them
	}
	if err := p.Initialize(db); err != nil { // which puts p in db.Plugins
		if _, f, ok := copyDialector(inner); pool == nil && ok && !f.conn.IsNil() {
			db.ConnPool = nil // the caller's Conn, which gorm.Open would close
		}
		return err
	}
	db.Dialector = inner
	return nil
}

// Apply passes GORM's configuration to the wrapped dialector when it
// takes it (mysql and postgres do).
func (d *dialector) Apply(c *gorm.Config) error {
	if a, ok := d.Dialector.(interface{ Apply(*gorm.Config) error }); ok {
		return a.Apply(c)
	}
	return nil
}

// poolFields are the fields of a dialector (or of its Config) that say how
// it opens its pool, in a copy that this package may change.
type poolFields struct {
	dsn        reflect.Value // string
	driverName reflect.Value // string; invalid when there is none
	conn       reflect.Value // gorm.ConnPool
	holder     reflect.Value // the struct that holds them
}

var connPoolType = reflect.TypeFor[gorm.ConnPool]()

// copyDialector returns a copy of d, and the fields of the copy that open
// its pool; ok is false when d has no such fields (the copy is then d).
// A dialector's Config held by pointer is copied too, so d is never
// changed.
func copyDialector(d gorm.Dialector) (gorm.Dialector, poolFields, bool) {
	v := reflect.ValueOf(d)
	byPointer := isStructPointer(v)
	if byPointer {
		v = v.Elem()
	} else if v.Kind() != reflect.Struct {
		return d, poolFields{}, false
	}
	cp := copyOf(v)
	holder := cp.Elem()
	if _, ok := directField(holder, "Conn"); !ok {
		cfg, ok := directField(holder, "Config")
		switch {
		case ok && isStructPointer(cfg):
			cfg.Set(copyOf(cfg.Elem()))
			holder = cfg.Elem()
		case ok && cfg.Kind() == reflect.Struct:
			holder = cfg
		default:
			return d, poolFields{}, false
		}
	}
	conn, okConn := directField(holder, "Conn")
	dsn, okDSN := directField(holder, "DSN")
	if !okConn || conn.Type() != connPoolType || !okDSN || dsn.Kind() != reflect.String {
		return d, poolFields{}, false
	}
	f := poolFields{dsn: dsn, conn: conn, holder: holder}
	if dn, ok := directField(holder, "DriverName"); ok && dn.Kind() == reflect.String {
		f.driverName = dn
	}
	if !byPointer {
		cp = cp.Elem()
	}
	return cp.Interface().(gorm.Dialector), f, true
}

// isStructPointer reports whether v is a non-nil pointer to a struct.
func isStructPointer(v reflect.Value) bool {
	return v.Kind() == reflect.Pointer && !v.IsNil() && v.Elem().Kind() == reflect.Struct
}

// copyOf returns a pointer to a new copy of v.
func copyOf(v reflect.Value) reflect.Value {
	p := reflect.New(v.Type())
	p.Elem().Set(v)
	return p
}

// settings returns how config.ParseDSN reads the DSN of a dialector named
// name with these fields (see dsnForm), its DriverName ("" when it has
// none) and its DSN (the DSNConfig's when the DSN field is empty).
func (f poolFields) settings(name string) (form, driverName, dsn string) {
	if f.driverName.IsValid() {
		driverName = f.driverName.String()
	}
	if dsn = f.dsn.String(); dsn == "" {
		dsn = formatDSNConfig(f.holder)
	}
	return dsnForm(name, driverName), driverName, dsn
}

// directField returns the settable exported field name declared in the
// struct v itself (not promoted from an embedded one).
func directField(v reflect.Value, name string) (reflect.Value, bool) {
	sf, ok := v.Type().FieldByName(name)
	if !ok || len(sf.Index) != 1 || !sf.IsExported() {
		return reflect.Value{}, false
	}
	return v.Field(sf.Index[0]), true
}

// dsnForm returns how config.ParseDSN reads the DSN of a dialector with
// this Name and DriverName.
func dsnForm(name, driverName string) string {
	if f := family.Of(name); f != family.Other { // GORM's dialectors are named as their family
		return f.Driver()
	}
	if driverName != "" {
		return driverName
	}
	return name
}

// withConnectionLoop returns a copy of d whose Conn is a *sql.DB opened
// through the driver layer with opts and d's DSN (also returned), so that
// every new pooled connection runs the connection loop; it returns d and
// a nil pool when d keeps a Conn of its own or is of another shape. For
// reopen (the plugin over a DB whose dialector opened its pool), d must
// also be of a family crl knows and have a DSN.
func withConnectionLoop(d gorm.Dialector, opts []Option, reopen bool) (gorm.Dialector, *sql.DB, error) {
	name := d.Name()
	cp, f, ok := copyDialector(d)
	if !ok || !f.conn.IsNil() {
		return d, nil, nil
	}
	form, driverName, dsn := f.settings(name)
	if reopen {
		if family.Of(name) == family.Other || dsn == "" {
			return d, nil, nil
		}
		dropOwnTimeZoneOption(f, dsn)
	}
	rt, driverDSN, err := newRuntime(form, dsn, opts)
	if err != nil {
		return nil, nil, err
	}
	if driverName == "" {
		if driverName, err = registeredDriver(name); err != nil {
			return nil, nil, err
		}
		if simple := family.Of(name).Profile().SimpleProtocol; simple != "" {
			if driverDSN, err = postgresDSN(f.holder, driverDSN, simple); err != nil {
				return nil, nil, err
			}
		}
	}
	db, err := crl.OpenRuntime(driverName, driverDSN, rt)
	if err != nil {
		return nil, nil, fmt.Errorf("gormcrl: Open: %w", err)
	}
	f.dsn.SetString(driverDSN)
	f.conn.Set(reflect.ValueOf(db))
	return cp, db, nil
}

// newRuntime builds the Runtime of a handle and returns it with the DSN
// for the driver.
func newRuntime(form, dsn string, opts []Option) (*config.Runtime, string, error) {
	rt, driverDSN, err := config.NewRuntime(form, dsn, opts...)
	if err != nil {
		return nil, "", fmt.Errorf("gormcrl: %w", err)
	}
	return rt, driverDSN, nil
}

// registeredDriver returns the database/sql driver a dialector named name
// opens when its DriverName is empty: the first registered of its
// defaults, or an error naming them. GORM's dialectors of crl's families
// are named as the family and open its driver (postgres: pgx, as pgx's
// stdlib registers it); sqlite's open a pure-Go sqlite, else
// mattn/go-sqlite3.
func registeredDriver(name string) (string, error) {
	want := []string{name}
	if f := family.Of(name); f != family.Other && f.String() == name {
		want = []string{f.Driver()}
	} else if name == "sqlite" {
		want = []string{"sqlite", "sqlite3"}
	}
	registered := sql.Drivers()
	for _, n := range want {
		if slices.Contains(registered, n) {
			return n, nil
		}
	}
	return "", fmt.Errorf("gormcrl: Open: the %s dialector has no DriverName and no database/sql driver named %s is registered (registered: %s); import the driver or set DriverName",
		name, strings.Join(want, " or "), strings.Join(registered, ", "))
}

// formatDSNConfig returns the DSN of a mysql dialector's DSNConfig (a
// *mysql.Config of go-sql-driver/mysql, through its FormatDSN method) when
// the DSN field is empty, or "".
func formatDSNConfig(holder reflect.Value) string {
	c, ok := directField(holder, "DSNConfig")
	if !ok || (c.Kind() == reflect.Pointer && c.IsNil()) {
		return ""
	}
	// An interface, not reflect's MethodByName, which would keep every
	// method of every type in the user's binary.
	if f, ok := c.Interface().(interface{ FormatDSN() string }); ok {
		return f.FormatDSN()
	}
	return ""
}

// postgresDSN carries the settings of gorm.io/driver/postgres's Config that
// its own pgx pool takes from the Config rather than the DSN into the DSN
// of pgx's registered driver: PreferSimpleProtocol becomes simple, the
// driver's key=value for it (family.Profile.SimpleProtocol:
// default_query_exec_mode=simple_protocol). OptionOpenDB (options of pgx's
// stdlib) cannot be passed to a registered driver: it is an error rather
// than silently dropped.
func postgresDSN(holder reflect.Value, dsn, simple string) (string, error) {
	if o, ok := directField(holder, "OptionOpenDB"); ok && o.Kind() == reflect.Slice && o.Len() > 0 {
		return "", fmt.Errorf("gormcrl: Open: postgres.Config.OptionOpenDB cannot be applied to the retrying pool (crl opens pgx's registered driver); pass the options to stdlib.GetConnector and use gormcrl.OpenDB, or drop OptionOpenDB")
	}
	flag, ok := directField(holder, "PreferSimpleProtocol")
	if !ok || flag.Kind() != reflect.Bool || !flag.Bool() {
		return dsn, nil
	}
	key, _, _ := strings.Cut(simple, "=")
	if strings.Contains(strings.ToLower(dsn), key) {
		return "", fmt.Errorf("gormcrl: Open: postgres.Config.PreferSimpleProtocol and the DSN's %s are both set; keep one", key)
	}
	switch {
	case strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://"):
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		return dsn + sep + simple, nil
	case strings.TrimSpace(dsn) == "":
		return simple, nil
	}
	return dsn + " " + simple, nil
}

// nilDialector reports whether d is nil or a nil pointer:
// (*mysql.Dialector)(nil) is a non-nil gorm.Dialector whose first method
// call panics, far from the Open or OpenDB that took it.
func nilDialector(d gorm.Dialector) bool {
	v := reflect.ValueOf(d)
	return d == nil || v.Kind() == reflect.Pointer && v.IsNil()
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
