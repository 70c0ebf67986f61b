package core

import "github.com/crl-go/crl/internal/tables/family"

// What a retryable failure costs the retry budget depends on what it says
// of the database. A deadlock victim or a serialization failure is
// contention: the database is healthy, it chose a victim, and retrying the
// victim is the only way the work gets done. A time-out, throttling, "too
// many connections", a lock-wait time-out or a resource error is overload:
// the database is short of something, and every retry adds to what it is
// short of. Everything else a rule retries (a failover, a broken
// connection) is transient. docs/semantics.md ("The retry budget") gives
// the reasoning for each entry.

// budgetClass is the budget's class of a retryable failure.
type budgetClass uint8

const (
	classTransient  budgetClass = iota // costs 1 token
	classContention                    // costs BudgetSettings.ContentionCost
	classOverload                      // costs BudgetSettings.OverloadCost
	classCount
)

// classNames are the classes as the retryBudget setting names them.
var classNames = [classCount]string{classTransient: "transient", classContention: "contention", classOverload: "overload"}

// errFamily is the database family an error comes from, told by its shape:
// go-mssqldb's errors carry SQLErrorNumber, go-sql-driver/mysql's are
// *MySQLError, pgx's and lib/pq's carry SQLState. The same number means
// different things in different families (1205 is a deadlock victim in SQL
// Server and a lock-wait time-out in MySQL), so the table is per family.
// The families are crl's one table's (internal/tables/family); familyNone is an
// error without a server's code (a network failure, a context error).
type errFamily = family.Family

const (
	familyNone      = family.Other
	familySQLServer = family.SQLServer
	familyMySQL     = family.MySQL
	familyPostgres  = family.Postgres
)

// classTable is the one table of classes: every error it does not name is
// transient, and a time-out (the named condition timeout) is overload
// whatever its number.
var classTable = [...]struct {
	family errFamily
	tok    string // an error number or a SQLSTATE, as rules write them
	class  budgetClass
}{
	// SQL Server: deadlock victim; snapshot isolation update conflict;
	// In-Memory OLTP commit dependency, update conflict, repeatable-read and
	// serializable validation failures.
	{familySQLServer, "1205", classContention},
	{familySQLServer, "3960", classContention},
	{familySQLServer, "41301", classContention},
	{familySQLServer, "41302", classContention},
	{familySQLServer, "41305", classContention},
	{familySQLServer, "41325", classContention},
	// SQL Server: insufficient memory; lock resources exhausted; lock
	// request time-out; memory grant time-out; Azure SQL resource limits
	// (10928, 10929), service busy (40501) and too many requests or
	// operations (49918–49920).
	{familySQLServer, "701", classOverload},
	{familySQLServer, "1204", classOverload},
	{familySQLServer, "1222", classOverload},
	{familySQLServer, "8645", classOverload},
	{familySQLServer, "10928", classOverload},
	{familySQLServer, "10929", classOverload},
	{familySQLServer, "40501", classOverload},
	{familySQLServer, "49918", classOverload},
	{familySQLServer, "49919", classOverload},
	{familySQLServer, "49920", classOverload},

	// MySQL/MariaDB: deadlock (ER_LOCK_DEADLOCK); XA branch rolled back as
	// a deadlock victim (ER_XA_RBDEADLOCK); a row changed since the
	// transaction's snapshot (ER_CHECKREAD, MariaDB's snapshot isolation).
	{familyMySQL, "1213", classContention},
	{familyMySQL, "1614", classContention},
	{familyMySQL, "1020", classContention},
	// MySQL/MariaDB: out of memory (1037, 1038, 1041); too many connections
	// (1040, and per user 1203, 1226); lock-wait time-out (1205); NOWAIT
	// lock not available (3572); the execution cut-offs (MySQL 3024,
	// MariaDB 1969), which are time-outs too.
	{familyMySQL, "1037", classOverload},
	{familyMySQL, "1038", classOverload},
	{familyMySQL, "1040", classOverload},
	{familyMySQL, "1041", classOverload},
	{familyMySQL, "1203", classOverload},
	{familyMySQL, "1205", classOverload},
	{familyMySQL, "1226", classOverload},
	{familyMySQL, "1969", classOverload},
	{familyMySQL, "3024", classOverload},
	{familyMySQL, "3572", classOverload},

	// PostgreSQL: deadlock detected; serialization failure.
	{familyPostgres, "40P01", classContention},
	{familyPostgres, "40001", classContention},
	// PostgreSQL: insufficient resources, out of memory, too many
	// connections, configuration limit exceeded, lock not available,
	// statement cancelled (statement_timeout, a time-out too).
	{familyPostgres, "53000", classOverload},
	{familyPostgres, "53200", classOverload},
	{familyPostgres, "53300", classOverload},
	{familyPostgres, "53400", classOverload},
	{familyPostgres, "55P03", classOverload},
	{familyPostgres, "57014", classOverload},
}

// familyToken is a key of builtinClasses.
type familyToken struct {
	family errFamily
	tok    token
}

// builtinClasses is classTable as a lookup; it is never written after
// package initialisation.
var builtinClasses = func() map[familyToken]budgetClass {
	m := make(map[familyToken]budgetClass, len(classTable))
	for _, e := range classTable {
		if t, err := parseToken(e.tok); err == nil { // TestClassTableParses catches a typo
			m[familyToken{e.family, t}] = e.class
		}
	}
	return m
}()

// errorToken is the token the class table knows an error by: its SQLSTATE
// for PostgreSQL, its number otherwise (0, false without either).
func (f *errorFacts) errorToken() (token, bool) {
	if f.family == familyPostgres {
		return f.state, f.state != 0
	}
	if f.hasNumber {
		return numberToken(f.number)
	}
	return 0, false
}

// builtinClass is f's class by the table (tableClass).
func (f *errorFacts) builtinClass() budgetClass {
	if f.timeout {
		return classOverload
	}
	if t, ok := f.errorToken(); ok {
		return tableClass(f.family, t)
	}
	return classTransient
}

// tableClass is the class of the error token t of family fam by the
// table: overload for a time-out, the table's entry, else transient.
func tableClass(fam errFamily, t token) budgetClass {
	if t == tokenTimeout {
		return classOverload
	}
	if k, ok := builtinClasses[familyToken{fam, t}]; ok {
		return k
	}
	return classTransient
}
