package gormcrl

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"

	"gorm.io/gorm"

	"github.com/crl-go/crl"
)

// OpenDB is Open for a driver.Connector of your own: the driver's dialector
// d runs over a pool opened from c under crl's connection loop, and the
// plugin is registered on the same configuration, so the handle has one
// retry budget, one breaker and one properties file:
//
//	c, err := mssql.NewConnectorWithAccessTokenProvider(dsn, tokenProvider)
//	…
//	db, err := gorm.Open(gormcrl.OpenDB(sqlserver.New(sqlserver.Config{}), c,
//		gormcrl.WithRetryExec("{1205:3,100ms*2}")), &gorm.Config{})
//
// This is the way in for a connector that a DSN cannot express: Azure SQL
// with a token provider, pgx's stdlib.GetConnector with a BeforeConnect
// that rotates passwords, go-sql-driver/mysql's mysql.NewConnector, a
// driver wrapped for tracing. d is one of the dialectors Open knows (an
// exported Conn field, as gorm.io/driver/sqlserver, mysql and postgres
// have); its DSN is not used to connect and not read for settings (the
// connector already holds what it needs), so the settings come from opts,
// the properties file and the defaults, as with crl.WrapConnector. The
// driver family is the dialector's Name (sqlserver, mysql, postgres);
// config.WithDriverFamily overrides it.
//
// As with Open, db.Dialector becomes the driver's own dialector (a copy of
// d whose Conn is the pool), d itself is never changed, and every error —
// a nil dialector or connector, a dialector that already has a Conn or
// cannot take one, a bad option — is returned by gorm.Open.
func OpenDB(d gorm.Dialector, c driver.Connector, opts ...Option) gorm.Dialector {
	return &connectorDialector{dialector: dialector{Dialector: d, opts: opts}, connector: c}
}

// connectorDialector is the dialector OpenDB returns. Its Apply and Name
// are the wrapped dialector's (through the embedded dialector).
type connectorDialector struct {
	dialector
	connector driver.Connector
}

var _ gorm.Dialector = (*connectorDialector)(nil)

// Initialize gives a copy of the wrapped dialector a pool over the
// connector under the connection loop, initializes it, registers the
// plugin and puts the copy in db.Dialector.
func (d *connectorDialector) Initialize(db *gorm.DB) error {
	if nilDialector(d.Dialector) {
		return errors.New("gormcrl: OpenDB: the dialector is nil")
	}
	name := d.Dialector.Name()
	inner, f, ok := copyDialector(d.Dialector)
	if !ok {
		return fmt.Errorf("gormcrl: OpenDB: the %s dialector (%T) has no Conn field to take a pool; use Open, or open the pool yourself and db.Use(gormcrl.New(...))", name, d.Dialector)
	}
	if !f.conn.IsNil() {
		return fmt.Errorf("gormcrl: OpenDB: the %s dialector already has a Conn; pass either a Conn or a connector, not both", name)
	}
	form, _, _ := f.settings(name)
	wrapped, _, err := crl.WrapConnector(d.connector, form, d.opts...)
	if err != nil {
		return fmt.Errorf("gormcrl: OpenDB: %w", err)
	}
	pool := sql.OpenDB(wrapped)
	f.conn.Set(reflect.ValueOf(pool))
	return initialize(db, inner, pool, d.opts)
}
