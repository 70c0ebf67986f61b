// Package family is crl's one table of driver families: which database a
// database/sql driver name (or a GORM dialector's name) talks to. The DSN
// reader, the properties-file lookup, the execution cut-off, gormcrl's
// dialector detection, the CLI and the OpenTelemetry hook all ask it, so
// a name one of them accepts every one of them accepts.
package family

import (
	"sort"
	"strings"
)

// Family is a database family.
type Family uint8

// The families.
const (
	Other     Family = iota // a driver crl does not know: its DSN is not read
	SQLServer               // go-mssqldb
	MySQL                   // go-sql-driver/mysql, for MySQL and MariaDB
	Postgres                // pgx, lib/pq
)

// names is the table: every driver name crl knows, lower-case, with its
// family. GORM's dialectors are named as their drivers' family is
// ("sqlserver", "mysql", "postgres"), so they are in it too, and so is
// every spelling a user may give WithDriverFamily (mariadb).
var names = map[string]Family{
	"sqlserver":  SQLServer,
	"mssql":      SQLServer,
	"azuresql":   SQLServer,
	"mysql":      MySQL,
	"mariadb":    MySQL,
	"pgx":        Postgres,
	"pgx/v5":     Postgres,
	"postgres":   Postgres,
	"postgresql": Postgres,
}

// Of returns the family of a driver name, case-insensitively; Other for a
// name the table does not have.
func Of(driverName string) Family {
	if f, ok := names[driverName]; ok { // the usual, lower-case spelling, without allocating
		return f
	}
	return names[strings.ToLower(driverName)]
}

// Names returns every name of the table, lower-case, in no order.
func Names() []string {
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	return out
}

// Parse reads a family as WithDriverFamily names it: any name of the
// table (sqlserver, mssql, azuresql; mysql, mariadb; pgx, pgx/v5,
// postgres, postgresql), case-insensitively, so that Parse and Of never
// disagree on a spelling.
func Parse(s string) (Family, bool) {
	f := Of(s)
	return f, f != Other
}

// Spellings returns the names of the table, sorted, for a message that
// lists what Parse takes.
func Spellings() string {
	n := Names()
	sort.Strings(n)
	return strings.Join(n, ", ")
}

// canonical is each family's own name and the driver name whose DSN forms
// its DSNs are read in, indexed by Family.
var canonical = [...]struct{ name, driver string }{
	Other:     {"other", ""},
	SQLServer: {"sqlserver", "sqlserver"},
	MySQL:     {"mysql", "mysql"},
	Postgres:  {"postgres", "pgx"},
}

// String returns the family's name as Parse reads it ("other" for Other).
func (f Family) String() string {
	if int(f) < len(canonical) {
		return canonical[f].name
	}
	return canonical[Other].name
}

// Driver returns the driver name whose DSN forms the family's DSNs are
// read in: "sqlserver", "mysql" or "pgx" ("" for Other).
func (f Family) Driver() string {
	if int(f) < len(canonical) {
		return canonical[f].driver
	}
	return ""
}

// Probes returns driver names for the consumers' tests: every name of the
// table, spelt as users spell them (upper and mixed case), and names the
// table does not have, each with its family.
func Probes() map[string]Family {
	out := map[string]Family{}
	for n, f := range names {
		out[n] = f
		out[strings.ToUpper(n)] = f
		out[strings.ToUpper(n[:1])+n[1:]] = f
	}
	for _, n := range []string{"", "sqlite3", "sqlite", "oracle", "pgx/v4", "postgres-otel", "sqlserver-otel", "mysql8", "clickhouse"} {
		out[n] = Other
	}
	return out
}
