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

// familyToken is a key of meanings.
type familyToken struct {
	family errFamily
	tok    token
}

// errorClass is one class by meaning: the rule token that names it, the
// errors it holds on each family, what the retry budget charges for one
// of them, and whether a connection rule may name it.
type errorClass struct {
	tok    token
	errors func(p *family.Profile) []string // the family's errors of the class; nil: a condition no number holds (badconn)
	cost   budgetClass
	conn   bool // retryConn may name it: a login may fail with it
}

// errorClasses is the one table of the classes by meaning, indexed by
// classIndex. Rules name a class by its token (tokenNames); the family
// table (family.Profile) lists each family's errors of each class; the
// retry budget charges each class's cost. A time-out is overload
// whatever its number; the listed numbers of timeout are the servers'
// execution cut-offs. Statement classes (deadlock, serialization,
// lockTimeout) never fail a login, so retryConn refuses them.
var errorClasses = [...]errorClass{
	-1 - tokenTimeout:       {tok: tokenTimeout, errors: func(p *family.Profile) []string { return p.CutoffErrors }, cost: classOverload, conn: true},
	-1 - tokenBadConn:       {tok: tokenBadConn, cost: classTransient, conn: true},
	-1 - tokenDeadlock:      {tok: tokenDeadlock, errors: func(p *family.Profile) []string { return p.Deadlock }, cost: classContention},
	-1 - tokenSerialization: {tok: tokenSerialization, errors: func(p *family.Profile) []string { return p.Serialization }, cost: classContention},
	-1 - tokenLockTimeout:   {tok: tokenLockTimeout, errors: func(p *family.Profile) []string { return p.LockTimeout }, cost: classOverload},
	-1 - tokenFailover:      {tok: tokenFailover, errors: func(p *family.Profile) []string { return p.Failover }, cost: classTransient, conn: true},
	-1 - tokenThrottle:      {tok: tokenThrottle, errors: func(p *family.Profile) []string { return p.Throttle }, cost: classOverload, conn: true},
}

// classIndex is the index in errorClasses of a class token.
func classIndex(t token) int { return int(-1 - t) }

// classOf returns the class a token names, or nil when t names no class
// (an error number or a SQLSTATE).
func classOf(t token) *errorClass {
	if i := classIndex(t); t < 0 && i < len(errorClasses) {
		return &errorClasses[i]
	}
	return nil
}

// meanings maps each family's error tokens to the token of their class,
// the families' rows of errorClasses as a lookup: an error it does not
// name is of no class (transient for the budget). It is never written
// after package initialisation.
var meanings = func() map[familyToken]token {
	m := map[familyToken]token{}
	for _, f := range family.All() {
		for i := range errorClasses {
			c := &errorClasses[i]
			if c.errors == nil {
				continue
			}
			for _, tok := range c.errors(f.Profile()) {
				if t, err := parseToken(tok); err == nil && t >= 0 { // TestClassTableParses catches a typo
					m[familyToken{f, t}] = c.tok
				}
			}
		}
	}
	return m
}()

// isCutoff reports an error token of family fam that its server's
// execution cut-off sends: a time-out.
func isCutoff(fam errFamily, t token) bool { return meanings[familyToken{fam, t}] == tokenTimeout }

// meaning returns the token of f's class by the table (0 for none).
func (f *errorFacts) meaning() token {
	if t, ok := f.errorToken(); ok {
		return meanings[familyToken{f.family, t}]
	}
	return 0
}

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

// tableClass is the budget class of the error token t of family fam by
// the table: a class token's own (overload for a time-out), the class
// of the error's meaning, else transient.
func tableClass(fam errFamily, t token) budgetClass {
	if c := classOf(t); c != nil {
		return c.cost
	}
	if m, ok := meanings[familyToken{fam, t}]; ok {
		return classOf(m).cost
	}
	return classTransient
}

// Failover reports whether err, or an error it wraps, is of the class
// failover on its family (MySQL 1290, PostgreSQL 25006, SQL Server 40613,
// …; docs/rules.md): the connection reached a server that cannot serve
// it now, so the driver layer takes the connection out of the pool and a
// retry runs on a new one. It is a method so that the driver layer asks
// the Retrier it already holds; it reads no state of r, which may be nil.
func (*Retrier) Failover(err error) bool {
	if err == nil {
		return false
	}
	f := factsOf(err, false)
	return f.meaning() == tokenFailover
}
