// Package family is crl's one table of database families: which database
// a database/sql driver name (or a GORM dialector's name) talks to, and
// everything crl does differently for it (Profile). The DSN reader, the
// properties-file lookup, the execution cut-off, COMMIT under its context,
// the reading of transaction statements, error classification, sqlx's
// bind type, the CLI and the OpenTelemetry hook's system name all read
// their family's Profile, so a name one of them accepts every one of them
// accepts, and adding a family is one entry of the table (profiles).
package family

import (
	"sort"
	"strconv"
	"strings"
	"time"
)

// Family is a database family.
type Family uint8

// The families.
const (
	Other     Family = iota // a driver crl does not know: its DSN is not read
	SQLServer               // go-mssqldb
	MySQL                   // go-sql-driver/mysql, for MySQL and MariaDB
	Postgres                // pgx, lib/pq
	count
)

// profiles is the table, one entry per family, indexed by Family.
var profiles = [count]Profile{
	Other: {
		Name: "other",
		// A driver crl does not know gets every way of beginning a
		// transaction, and only the ends every family reads alike.
		TxText: TxTextAny,
	},
	SQLServer: {
		Name:       "sqlserver",
		Aliases:    []string{"sqlserver", "mssql", "azuresql"},
		Driver:     "sqlserver",
		DSN:        DSNURLOrADO,
		Schemes:    []string{"sqlserver"},
		BindDriver: "sqlserver",
		SystemName: "microsoft.sql_server",
		// go-mssqldb cancels a statement on the server (ATTENTION) when
		// its context ends.
		CutoffByDriver: true,
		Errors:         NumberedErrors,
		Deadlock:       []string{"1205"},
		// Snapshot isolation update conflict; In-Memory OLTP commit
		// dependency, update conflict, repeatable-read and serializable
		// validation failures.
		Serialization: []string{"3960", "41301", "41302", "41305", "41325"},
		LockTimeout:   []string{"1222"},
		// Availability groups: database not accessible (976), read-only
		// intent required (978), replica neither primary nor secondary
		// (983), a secondary compute or replica change ended the
		// transaction (3947, 3948); the database is read-only (3906);
		// database not recovered, not started, in transition, without
		// quorum, offline (921, 941, 952, 988, 615); Azure SQL
		// reconfiguration (40197, 40143, 40540), database unavailable
		// (40613, 49802), read-secondary login wait (4221), serverless pool
		// warming up (42109).
		Failover: []string{"615", "921", "941", "952", "976", "978", "983", "988", "3906", "3947", "3948",
			"4221", "40143", "40197", "40540", "40613", "42109", "49802"},
		// Insufficient memory (701), memory grants (8645, 8651), lock
		// resources (1204), version store shrunk (3966), optimizer time-out
		// (8628); Azure SQL resource and request limits (10928, 10929,
		// 10936, 40189), service or server busy (10930, 40501, 40642,
		// 40675, 40903), too many requests or operations (40648,
		// 49918–49920), not enough resources (22498).
		Throttle: []string{"701", "1204", "3966", "8628", "8645", "8651", "10928", "10929", "10930", "10936",
			"22498", "40189", "40501", "40642", "40648", "40675", "40903", "49918", "49919", "49920"},
		JDBCLogin:      true,
		TransientList:  true,
		PropertiesFile: true,
		AzureDefaults:  true,
		TxText:         TxTextTSQL,
		// Deadlock victim; snapshot isolation update conflict: both roll
		// the transaction back. A lock request time-out (1222) ends the
		// statement only, unless XACT_ABORT is on.
		EndsTx:        []string{"1205", "3960"},
		EndsStatement: []string{"1222"},
		LiveTx:        "SELECT CASE WHEN XACT_STATE() = 1 THEN 1 ELSE 0 END",
	},
	MySQL: {
		Name:       "mysql",
		Aliases:    []string{"mysql", "mariadb"},
		Driver:     "mysql",
		DSN:        DSNMySQL,
		Schemes:    []string{"mysql", "mariadb"},
		BindDriver: "mysql",
		SystemName: "mysql",
		// database/sql gives a driver's Commit no context, and
		// go-sql-driver/mysql's does not take BeginTx's either.
		CommitIgnoresContext: true,
		Cutoff: func(d time.Duration) []string {
			return []string{
				"SET SESSION max_statement_time = " + strconv.FormatFloat(d.Seconds(), 'f', -1, 64), // MariaDB
				"SET SESSION max_execution_time = " + millis(d),                                     // MySQL, SELECT only
			}
		},
		CutoffUnknown: 1193, // unknown system variable: MySQL has no max_statement_time
		CutoffErrors:  []string{"1969", "3024"},
		Errors:        MySQLErrors,
		// ER_LOCK_DEADLOCK; an XA branch rolled back as a deadlock victim
		// (ER_XA_RBDEADLOCK). InnoDB reports its serialization conflicts
		// as deadlocks too.
		Deadlock: []string{"1213", "1614"},
		// A row changed since the transaction's snapshot (ER_CHECKREAD,
		// MariaDB's snapshot isolation).
		Serialization: []string{"1020"},
		// Lock-wait time-out (innodb_lock_wait_timeout); NOWAIT lock not
		// available.
		LockTimeout: []string{"1205", "3572"},
		// The server is read-only (--read-only, as a demoted primary is:
		// ER_OPTION_PREVENTS_STATEMENT; ER_READ_ONLY_MODE).
		Failover: []string{"1290", "1836"},
		// Too many connections (1040, and per user 1203, 1226); out of
		// memory (1037, 1038, 1041).
		Throttle:           []string{"1037", "1038", "1040", "1041", "1203", "1226"},
		TooManyConnections: "1040",
		TxText:             TxTextMySQL,
		// Deadlock: InnoDB rolls the transaction back. A lock-wait
		// time-out (1205) ends the statement only, unless
		// innodb_rollback_on_timeout is on.
		EndsTx:        []string{"1213"},
		EndsStatement: []string{"1205"},
		LiveTx:        "SELECT @@innodb_rollback_on_timeout = 0",
	},
	Postgres: {
		Name:       "postgres",
		Aliases:    []string{"pgx", "pgx/v5", "postgres", "postgresql"},
		Driver:     "pgx",
		DSN:        DSNURLOrKeyValue,
		Schemes:    []string{"postgres", "postgresql"},
		BindDriver: "pgx",
		SystemName: "postgresql",
		Cutoff: func(d time.Duration) []string {
			return []string{"SET statement_timeout = " + millis(d)}
		},
		CutoffErrors:  []string{"57014"}, // query_canceled
		Errors:        SQLStateErrors,
		Deadlock:      []string{"40P01"},
		Serialization: []string{"40001"},
		LockTimeout:   []string{"55P03"}, // lock_not_available: lock_timeout, NOWAIT
		// A write in a read-only transaction (a standby, or
		// default_transaction_read_only after a failover);
		// administrator shutdown.
		Failover: []string{"25006", "57P01"},
		// Insufficient resources, out of memory, too many connections,
		// configuration limit exceeded.
		Throttle:           []string{"53000", "53200", "53300", "53400"},
		TooManyConnections: "53300",
		SimpleProtocol:     "default_query_exec_mode=simple_protocol",
		TxText:             TxTextPostgres,
		// Any error aborts the transaction; at COMMIT, a deadlock or a
		// serialization failure says it was rolled back.
		AnyErrorEndsTx: true,
		EndsTx:         []string{"40P01", "40001"},
	},
}

// millis is d in whole milliseconds, at least 1 (0 would turn a cut-off
// off).
func millis(d time.Duration) string { return strconv.FormatInt(max(d.Milliseconds(), 1), 10) }

// names maps every name of the table (Profile.Aliases), lower-case, to its
// family. It is never written after package initialisation.
var names = func() map[string]Family {
	m := map[string]Family{}
	for f := range profiles {
		for _, n := range profiles[f].Aliases {
			m[n] = Family(f)
		}
	}
	return m
}()

// Of returns the family of a driver name, case-insensitively; Other for a
// name the table does not have.
func Of(driverName string) Family {
	if f, ok := names[driverName]; ok { // the usual, lower-case spelling, without allocating
		return f
	}
	return names[strings.ToLower(driverName)]
}

// All returns every family but Other, in the table's order.
func All() []Family {
	out := make([]Family, 0, count-1)
	for f := Other + 1; f < count; f++ {
		out = append(out, f)
	}
	return out
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

// Profile returns the family's entry of the table (Other's for a value
// that is no family). It is shared: callers read it and never write it.
func (f Family) Profile() *Profile {
	if f < count {
		return &profiles[f]
	}
	return &profiles[Other]
}

// String returns the family's name as Parse reads it ("other" for Other).
func (f Family) String() string { return f.Profile().Name }

// Driver returns the driver name whose DSN forms the family's DSNs are
// read in: "sqlserver", "mysql" or "pgx" ("" for Other).
func (f Family) Driver() string { return f.Profile().Driver }

// OfScheme returns the family whose URL DSNs start with scheme://
// (Profile.Schemes), case-insensitively and with or without jdbc:; Other
// for a scheme the table does not have.
func OfScheme(scheme string) Family {
	s := strings.TrimPrefix(strings.ToLower(scheme), "jdbc:")
	for f := range profiles {
		for _, known := range profiles[f].Schemes {
			if s == known {
				return Family(f)
			}
		}
	}
	return Other
}

// OfErrors returns the family whose driver's errors have shape s
// (Profile.Errors): each shape is one family's. Other for NoErrors.
func OfErrors(s ErrorShape) Family {
	if s < errorShapes {
		return byErrors[s]
	}
	return Other
}

// byErrors is OfErrors's table; it is never written after package
// initialisation.
var byErrors = func() [errorShapes]Family {
	var out [errorShapes]Family
	for f := range profiles {
		if s := profiles[f].Errors; s != NoErrors {
			out[s] = Family(f)
		}
	}
	return out
}()
