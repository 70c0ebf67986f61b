package otel

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/microsoft/go-mssqldb/msdsn"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/crl-go/crl/config"
	crlfamily "github.com/crl-go/crl/internal/tables/family"
	"github.com/crl-go/crl/internal/text/dsnlex"
)

// family is what the hook knows of a database/sql driver name: the
// db.system.name its handles get and how its DSN is read. It is crl's one
// table of driver families (internal/tables/family).
type family = crlfamily.Family

const (
	familySQLServer = crlfamily.SQLServer
	familyMySQL     = crlfamily.MySQL
	familyPostgres  = crlfamily.Postgres
)

// system is the db.system.name of the family's handles. MySQL's driver
// serves MariaDB too, which it cannot tell apart: Options.DBSystem says
// mariadb.
func system(f family) attribute.KeyValue {
	switch f {
	case familySQLServer:
		return semconv.DBSystemNameMicrosoftSQLServer
	case familyMySQL:
		return semconv.DBSystemNameMySQL
	case familyPostgres:
		return semconv.DBSystemNamePostgreSQL
	}
	return semconv.DBSystemNameOtherSQL
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

// readDSN reads the endpoint from dsn, a DSN of driverName as crl's
// adapters take it: crl's own keys are removed first (config.ParseDSN),
// then the driver's own parser reads it where the driver exports one.
// Neither the user nor the password is kept.
func readDSN(f family, driverName, dsn string) (endpoint, error) {
	_, driverDSN, err := config.ParseDSN(driverName, dsn)
	if err != nil {
		return endpoint{}, dsnError(driverName, err)
	}
	switch f {
	case familySQLServer:
		c, err := msdsn.Parse(driverDSN)
		if err != nil {
			return endpoint{}, dsnError(driverName, err)
		}
		return endpoint{host: c.Host, port: int(c.Port), instance: c.Instance, database: c.Database}, nil
	case familyMySQL:
		c, err := mysql.ParseDSN(driverDSN)
		if err != nil {
			return endpoint{}, dsnError(driverName, err)
		}
		e := endpoint{database: c.DBName}
		if c.Net == "unix" {
			e.host = c.Addr // the socket's path is the address
			return e, nil
		}
		e.host, e.port = splitHostPort(c.Addr)
		return e, nil
	case familyPostgres:
		return readPostgresDSN(driverName, driverDSN)
	}
	return endpoint{}, nil
}

// readPostgresDSN reads the URL forms (postgres://, postgresql://) and the
// keyword/value form (host=… port=… dbname=…) that pgx and lib/pq take,
// the latter read by crl's DSN lexer (internal/text/dsnlex) as pgx reads it.
// Of several hosts, the first is the address.
func readPostgresDSN(driverName, dsn string) (endpoint, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return endpoint{}, dsnError(driverName, err)
		}
		host, _, _ := strings.Cut(u.Host, ",")
		e := endpoint{database: strings.TrimPrefix(u.Path, "/")}
		e.host, e.port = splitHostPort(host)
		if h := u.Query().Get("host"); e.host == "" && h != "" {
			e.host = h
		}
		return e, nil
	}
	var e endpoint
	pairs, _ := dsnlex.Pairs(dsn, dsnlex.FormKeyValue, nil) // none is crl's: no error
	for _, p := range pairs {
		if !p.Eq {
			break
		}
		switch v := p.Value; p.Key {
		case "host":
			e.host, _, _ = strings.Cut(v, ",")
		case "port":
			port, _, _ := strings.Cut(v, ",")
			e.port, _ = strconv.Atoi(port)
		case "dbname":
			e.database = v
		}
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
