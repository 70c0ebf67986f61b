package otel

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/microsoft/go-mssqldb/msdsn"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/crl-go/crl/config"
)

// system is the db.system.name of a driver's handles, by crl's table of
// driver families (config.SystemName); ok is false for a driver crl does
// not know, whose handles are other_sql. MySQL's driver serves MariaDB
// too, which it cannot tell apart: Options.DBSystem says mariadb.
func system(driverName string) (_ attribute.KeyValue, ok bool) {
	if s := config.SystemName(driverName); s != "" {
		return semconv.DBSystemNameKey.String(s), true
	}
	return semconv.DBSystemNameOtherSQL, false
}

// endpointReaders read the endpoint of a driver's DSN, crl's keys
// removed, with the driver's own parser, by the db.system.name of the
// driver's handles. A system without one gets no endpoint attributes.
var endpointReaders = map[string]func(dsn string) (endpoint, error){
	semconv.DBSystemNameMicrosoftSQLServer.Value.AsString(): readSQLServerDSN,
	semconv.DBSystemNameMySQL.Value.AsString():              readMySQLDSN,
	semconv.DBSystemNamePostgreSQL.Value.AsString():         readPostgresDSN,
}

// endpoint is what a DSN says of where the handle connects.
type endpoint struct {
	host     string
	port     int    // 0: not said
	instance string // SQL Server's named instance
	database string
}

// attributes are db.namespace, server.address and server.port, each when
// the DSN says it. db.namespace is the database name; for a SQL Server
// named instance it is {instance}|{database}, as the conventions spell it.
func (e endpoint) attributes() []attribute.KeyValue {
	var a []attribute.KeyValue
	switch {
	case e.instance != "" && e.database != "":
		a = append(a, semconv.DBNamespace(e.instance+"|"+e.database))
	case e.database != "":
		a = append(a, semconv.DBNamespace(e.database))
	}
	if e.host != "" {
		a = append(a, semconv.ServerAddress(e.host))
		if e.port > 0 {
			a = append(a, semconv.ServerPort(e.port))
		}
	}
	return a
}

// readDSN reads the endpoint from dsn, a DSN of driverName (whose handles
// are sys) as crl's adapters take it: crl's own keys are removed first
// (config.ParseDSN), then the driver's own parser reads it. Neither the
// user nor the password is kept.
func readDSN(sys attribute.KeyValue, driverName, dsn string) (endpoint, error) {
	read, ok := endpointReaders[sys.Value.AsString()]
	if !ok {
		return endpoint{}, nil
	}
	_, driverDSN, err := config.ParseDSN(driverName, dsn)
	if err != nil {
		return endpoint{}, dsnError(driverName, err)
	}
	e, err := read(driverDSN)
	if err != nil {
		return endpoint{}, dsnError(driverName, err)
	}
	return e, nil
}

// readSQLServerDSN reads every form go-mssqldb takes (URL, ADO, odbc:).
func readSQLServerDSN(dsn string) (endpoint, error) {
	c, err := msdsn.Parse(dsn)
	if err != nil {
		return endpoint{}, err
	}
	return endpoint{host: c.Host, port: int(c.Port), instance: c.Instance, database: c.Database}, nil
}

// readMySQLDSN reads go-sql-driver/mysql's DSN; a Unix socket's path is
// the address.
func readMySQLDSN(dsn string) (endpoint, error) {
	c, err := mysql.ParseDSN(dsn)
	if err != nil {
		return endpoint{}, err
	}
	e := endpoint{database: c.DBName}
	if c.Net == "unix" {
		e.host = c.Addr
		return e, nil
	}
	e.host, e.port = splitHostPort(c.Addr)
	return e, nil
}

// readPostgresDSN reads the URL forms (postgres://, postgresql://), each
// part when the URL says it, and the keyword/value form (host=… port=…
// dbname=…) that pgx and lib/pq take, read by pgx's own parser (which
// fills in what the DSN leaves out as pgx would when it connects). Of
// several hosts, the first is the address.
func readPostgresDSN(dsn string) (endpoint, error) {
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		c, err := pgconn.ParseConfig(dsn)
		if err != nil {
			return endpoint{}, err
		}
		return endpoint{host: c.Host, port: int(c.Port), database: c.Database}, nil
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return endpoint{}, err
	}
	host, _, _ := strings.Cut(u.Host, ",")
	e := endpoint{database: strings.TrimPrefix(u.Path, "/")}
	e.host, e.port = splitHostPort(host)
	if h := u.Query().Get("host"); e.host == "" && h != "" {
		e.host = h
	}
	return e, nil
}

// splitHostPort splits host:port, [v6]:port or a bare host; a port that is
// not a number is left out.
func splitHostPort(hp string) (string, int) {
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		return strings.Trim(hp, "[]"), 0
	}
	p, _ := strconv.Atoi(port)
	return host, p
}

// dsnError is the error of a DSN that does not parse. A *url.Error is
// replaced by its cause: it quotes the URL, password included.
func dsnError(driverName string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("otel: DSN of driver %q: %w", driverName, err)
}
