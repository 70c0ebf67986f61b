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

// errFamily is the database family an error comes from, told by its shape
// (family.Profile.Errors): go-mssqldb's errors carry SQLErrorNumber,
// go-sql-driver/mysql's are *MySQLError, pgx's and lib/pq's carry
// SQLState. The same number means different things in different families
// (1205 is a deadlock victim in SQL Server and a lock-wait time-out in
// MySQL), so the class table is per family. familyNone is an error
// without a server's code (a network failure, a context error).
type errFamily = family.Family

const familyNone = family.Other

// The families whose errors have each shape.
var (
	familyOfNumbered = family.OfErrors(family.NumberedErrors)
	familyOfMySQL    = family.OfErrors(family.MySQLErrors)
	familyOfState    = family.OfErrors(family.SQLStateErrors)
)

// familyToken is a key of builtinClasses and cutoffs.
type familyToken struct {
	family errFamily
	tok    token
}

// builtinClasses is the one table of classes, the families' rows
// (family.Profile.Contention and Overload) as a lookup: every error it
// does not name is transient, and a time-out (the named condition
// timeout) is overload whatever its number. It is never written after
// package initialisation.
var builtinClasses = func() map[familyToken]budgetClass {
	m := map[familyToken]budgetClass{}
	for _, f := range family.All() {
		p := f.Profile()
		for _, row := range [...]struct {
			toks  []string
			class budgetClass
		}{{p.Contention, classContention}, {p.Overload, classOverload}} {
			for _, tok := range row.toks {
				if t, err := parseToken(tok); err == nil { // TestClassTableParses catches a typo
					m[familyToken{f, t}] = row.class
				}
			}
		}
	}
	return m
}()

// cutoffs are the errors of a statement that a server's execution cut-off
// stopped (family.Profile.CutoffErrors): time-outs. It is never written
// after package initialisation.
var cutoffs = func() map[familyToken]bool {
	m := map[familyToken]bool{}
	for _, f := range family.All() {
		for _, tok := range f.Profile().CutoffErrors {
			if t, err := parseToken(tok); err == nil { // TestClassTableParses catches a typo
				m[familyToken{f, t}] = true
			}
		}
	}
	return m
}()

// errorToken is the token the class table knows an error by: its SQLSTATE
// for PostgreSQL, its number otherwise (0, false without either).
func (f *errorFacts) errorToken() (token, bool) {
	if f.family.Profile().Errors == family.SQLStateErrors {
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
