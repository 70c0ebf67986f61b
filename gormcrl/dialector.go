package gormcrl

import (
	"context"
	"database/sql/driver"
	"fmt"
	"regexp"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/internal/adapter"
)

// Open wraps a dialector so that gorm.Open gets the whole of CRL:
//
//	db, err := gorm.Open(gormcrl.Open(sqlserver.Open(dsn)), &gorm.Config{})
//
// For the dialectors of gorm.io/driver/sqlserver, mysql and postgres, the
// retry settings are read from the DSN (retryExec, retryConn,
// connectRetryCount, … are removed before the driver sees it), and the
// dialector gets a *sql.DB whose every new pooled connection runs the
// connection loop, so the open path (Initialize and GORM's automatic ping)
// and every later connection are retried as the JDBC driver retries them.
// A dialector that already has a Conn keeps it (its connections are not
// wrapped); one of another kind (sqlite, …) only gets the plugin.
//
// When the dialector is initialized the plugin (see New) is registered with
// the same settings; it replaces one registered under the same name.
// Configuration errors (a malformed rule in the DSN or in opts) are
// returned by gorm.Open.
//
// The returned dialector delegates every method to d, including the
// optional ones GORM looks for (Apply, Translate, SavePoint, RollbackTo);
// code that type-asserts db.Dialector to a driver's concrete type sees
// this package's type instead. Use one dialector per gorm.Open, as with
// GORM's own.
func Open(d gorm.Dialector, opts ...Option) gorm.Dialector {
	return &dialector{Dialector: d, opts: opts}
}

// dialector is the dialector Open returns.
type dialector struct {
	gorm.Dialector // the wrapped one; after Initialize, its copy that has our Conn
	opts           []Option
}

var (
	_ gorm.Dialector                         = (*dialector)(nil)
	_ gorm.ErrorTranslator                   = (*dialector)(nil)
	_ gorm.SavePointerDialectorInterface     = (*dialector)(nil)
	_ interface{ Apply(*gorm.Config) error } = (*dialector)(nil)
)

// Initialize gives the wrapped dialector a connection pool that runs the
// connection loop, initializes it and registers the plugin.
func (d *dialector) Initialize(db *gorm.DB) error {
	if d.Dialector == nil {
		return fmt.Errorf("gormcrl: Open: the dialector is nil")
	}
	inner, rt, err := withConnectionLoop(d.Dialector, d.opts)
	if err != nil {
		return err
	}
	d.Dialector = inner
	if err := inner.Initialize(db); err != nil {
		return err
	}
	p := &Plugin{opts: d.opts}
	p.runtime.Store(rt)
	if err := p.register(db); err != nil {
		return err
	}
	db.Plugins[PluginName] = p
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

// Translate translates err as the wrapped dialector does, or returns it.
func (d *dialector) Translate(err error) error {
	if t, ok := d.Dialector.(gorm.ErrorTranslator); ok {
		return t.Translate(err)
	}
	return err
}

// SavePoint sets a savepoint through the wrapped dialector.
func (d *dialector) SavePoint(tx *gorm.DB, name string) error {
	if s, ok := d.Dialector.(gorm.SavePointerDialectorInterface); ok {
		return s.SavePoint(tx, name)
	}
	return gorm.ErrUnsupportedDriver
}

// RollbackTo rolls back to a savepoint through the wrapped dialector.
func (d *dialector) RollbackTo(tx *gorm.DB, name string) error {
	if s, ok := d.Dialector.(gorm.SavePointerDialectorInterface); ok {
		return s.RollbackTo(tx, name)
	}
	return gorm.ErrUnsupportedDriver
}

// Unwrap returns the wrapped dialector.
func (d *dialector) Unwrap() gorm.Dialector { return d.Dialector }

// withConnectionLoop returns a copy of d whose Conn is a *sql.DB that runs
// the connection loop, and the Runtime built from opts and d's DSN. d
// itself is not changed.
func withConnectionLoop(d gorm.Dialector, opts []Option) (gorm.Dialector, *config.Runtime, error) {
	switch t := d.(type) {
	case *sqlserver.Dialector:
		if t != nil && t.Config != nil {
			cfg := *t.Config
			rt, err := sqlserverConn(&cfg, opts)
			return &sqlserver.Dialector{Config: &cfg}, rt, err
		}
	case sqlserver.Dialector:
		if t.Config != nil {
			cfg := *t.Config
			rt, err := sqlserverConn(&cfg, opts)
			return sqlserver.Dialector{Config: &cfg}, rt, err
		}
	case *mysql.Dialector:
		if t != nil && t.Config != nil {
			cfg := *t.Config
			rt, err := mysqlConn(&cfg, opts)
			return &mysql.Dialector{Config: &cfg}, rt, err
		}
	case mysql.Dialector:
		if t.Config != nil {
			cfg := *t.Config
			rt, err := mysqlConn(&cfg, opts)
			return mysql.Dialector{Config: &cfg}, rt, err
		}
	case *postgres.Dialector:
		if t != nil && t.Config != nil {
			cfg := *t.Config
			rt, err := postgresConn(&cfg, opts)
			return &postgres.Dialector{Config: &cfg}, rt, err
		}
	case postgres.Dialector:
		if t.Config != nil {
			cfg := *t.Config
			rt, err := postgresConn(&cfg, opts)
			return postgres.Dialector{Config: &cfg}, rt, err
		}
	}
	rt, _, err := runtimeAndDSN(d.Name(), "", opts)
	return d, rt, err
}

// runtimeAndDSN builds the Runtime and returns the DSN for the driver.
func runtimeAndDSN(format, dsn string, opts []Option) (*config.Runtime, string, error) {
	rt, driverDSN, err := config.New(format, dsn, opts...)
	if err != nil {
		return nil, "", fmt.Errorf("gormcrl: %w", err)
	}
	return rt, driverDSN, nil
}

func sqlserverConn(cfg *sqlserver.Config, opts []Option) (*config.Runtime, error) {
	rt, driverDSN, err := runtimeAndDSN("sqlserver", cfg.DSN, opts)
	if err != nil || cfg.Conn != nil {
		return rt, err
	}
	driverName := cfg.DriverName
	if driverName == "" {
		driverName = "sqlserver"
	}
	db, err := adapter.OpenDriver("gormcrl", "sqlserver", driverName, driverDSN, rt)
	if err != nil {
		return nil, err
	}
	cfg.DSN, cfg.Conn = driverDSN, db
	return rt, nil
}

func mysqlConn(cfg *mysql.Config, opts []Option) (*config.Runtime, error) {
	dsn := cfg.DSN
	if dsn == "" && cfg.DSNConfig != nil {
		dsn = cfg.DSNConfig.FormatDSN()
	}
	rt, driverDSN, err := runtimeAndDSN("mysql", dsn, opts)
	if err != nil || cfg.Conn != nil {
		return rt, err
	}
	driverName := cfg.DriverName
	if driverName == "" {
		driverName = mysql.DefaultDriverName
	}
	db, err := adapter.OpenDriver("gormcrl", "mysql", driverName, driverDSN, rt)
	if err != nil {
		return nil, err
	}
	cfg.DSN, cfg.Conn = driverDSN, db
	if c, err := mysqldriver.ParseDSN(driverDSN); err == nil {
		cfg.DSNConfig = c // the dialector reads Loc from it
	}
	return rt, nil
}

// pgTimeZone is how gorm.io/driver/postgres finds a time zone in a DSN.
var pgTimeZone = regexp.MustCompile("(time_zone|TimeZone|timezone)=(.*?)($|&| )")

func postgresConn(cfg *postgres.Config, opts []Option) (*config.Runtime, error) {
	rt, driverDSN, err := runtimeAndDSN("pgx", cfg.DSN, opts)
	if err != nil || cfg.Conn != nil {
		return rt, err
	}
	var inner driver.Connector
	if cfg.DriverName != "" {
		if inner, err = adapter.DriverConnector(cfg.DriverName, driverDSN); err != nil {
			return nil, fmt.Errorf("gormcrl: open %q: %w", cfg.DriverName, err)
		}
	} else {
		// What the dialector does without a Conn, with the connector kept.
		pc, err := pgx.ParseConfig(driverDSN)
		if err != nil {
			return nil, fmt.Errorf("gormcrl: postgres DSN: %w", err)
		}
		if cfg.PreferSimpleProtocol {
			pc.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
		}
		openOpts := append([]stdlib.OptionOpenDB(nil), cfg.OptionOpenDB...)
		if m := pgTimeZone.FindStringSubmatch(driverDSN); len(m) > 2 {
			zone := m[2]
			pc.RuntimeParams["timezone"] = zone
			openOpts = append(openOpts, stdlib.OptionAfterConnect(func(ctx context.Context, conn *pgx.Conn) error {
				loc, err := time.LoadLocation(zone)
				if err != nil {
					return err
				}
				conn.TypeMap().RegisterType(&pgtype.Type{
					Name: "timestamp", OID: pgtype.TimestampOID,
					Codec: &pgtype.TimestampCodec{ScanLocation: loc},
				})
				return nil
			}))
		}
		inner = stdlib.GetConnector(*pc, openOpts...)
	}
	db, err := adapter.OpenConnector("gormcrl", "pgx", inner, rt)
	if err != nil {
		return nil, err
	}
	cfg.DSN, cfg.Conn = driverDSN, db
	return rt, nil
}

// dialectorDSN returns how to read the DSN of d (a driver name that
// config.ParseDSN knows) and the DSN, or d's name and "" when d is not a
// dialector whose DSN this package can read.
func dialectorDSN(d gorm.Dialector) (format, dsn string) {
	if w, ok := d.(*dialector); ok {
		d = w.Dialector
	}
	switch t := d.(type) {
	case *sqlserver.Dialector:
		if t != nil && t.Config != nil {
			return "sqlserver", t.DSN
		}
	case sqlserver.Dialector:
		if t.Config != nil {
			return "sqlserver", t.DSN
		}
	case *mysql.Dialector:
		if t != nil && t.Config != nil {
			return "mysql", mysqlDSN(t.Config)
		}
	case mysql.Dialector:
		if t.Config != nil {
			return "mysql", mysqlDSN(t.Config)
		}
	case *postgres.Dialector:
		if t != nil && t.Config != nil {
			return "pgx", t.DSN
		}
	case postgres.Dialector:
		if t.Config != nil {
			return "pgx", t.DSN
		}
	case nil:
		return "", ""
	}
	return d.Name(), ""
}

func mysqlDSN(c *mysql.Config) string {
	if c.DSN == "" && c.DSNConfig != nil {
		return c.DSNConfig.FormatDSN()
	}
	return c.DSN
}
