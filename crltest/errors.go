package crltest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	mssql "github.com/microsoft/go-mssqldb"

	"github.com/crl-go/crl/internal/tables/family"
	"github.com/crl-go/crl/internal/tables/mssqlerrors"
)

// ErrUnknownFamily is matched (errors.Is) by what Deadlock and its
// siblings return for a family name they do not know. Its message names
// the name and the names expected; Inject refuses a Fault that carries it.
var ErrUnknownFamily = errors.New("crltest: unknown database family")

// Deadlock returns the error a deadlock victim gets from the driver of
// the database family ("sqlserver", "mysql", "postgres", or any other
// name crl knows for them: "mssql", "azuresql", "mariadb", "pgx",
// "postgresql", …), as that driver returns it:
//   - SQL Server: go-mssqldb's mssql.Error (a value, not a pointer, as
//     go-mssqldb returns it) 1205, class 13, state 51;
//   - MySQL and MariaDB: go-sql-driver/mysql's *mysql.MySQLError 1213,
//     SQLSTATE 40001;
//   - PostgreSQL: pgx's *pgconn.PgError 40P01.
//
// Each call returns a new value. For a name it does not know it returns
// an error that matches ErrUnknownFamily.
func Deadlock(family string) error { return errorOf(family, deadlock) }

// Serialization returns the error of a serialization failure (a
// transaction that cannot be serialized with a concurrent one), as
// Deadlock does for a deadlock victim: SQL Server's snapshot isolation
// update conflict 3960; PostgreSQL's 40001. MySQL and MariaDB report
// InnoDB's serialization conflicts as a deadlock, so it is their 1213
// (SQLSTATE 40001, which is the standard's serialization failure).
func Serialization(family string) error { return errorOf(family, serialization) }

// LockTimeout returns the error of a lock wait that timed out, as
// Deadlock does for a deadlock victim: SQL Server 1222 (LOCK_TIMEOUT);
// MySQL and MariaDB 1205 (innodb_lock_wait_timeout); PostgreSQL 55P03
// (lock_timeout).
func LockTimeout(family string) error { return errorOf(family, lockTimeout) }

// Failover returns the error a statement gets from a server that cannot
// serve it during or after a failover, as Deadlock does for a deadlock
// victim: SQL Server 40197 (Azure SQL's reconfiguration, met by a
// statement; 40613, met at login, is mssqltest.FailLogin's business);
// MySQL and MariaDB 1290 (the server is read-only, as a demoted primary
// is); PostgreSQL 25006 (a write in a read-only transaction, as on a
// standby).
func Failover(family string) error { return errorOf(family, failover) }

// Throttle returns the error of a server that refuses work because it is
// overloaded, as Deadlock does for a deadlock victim: Azure SQL's 40501
// (service busy); MySQL and MariaDB 1040 (too many connections);
// PostgreSQL 53300 (too many clients). The last two usually come at
// login; injected, they fail a statement.
func Throttle(family string) error { return errorOf(family, throttle) }

// Cutoff returns the error of a statement that the execution cut-off
// stopped (crl's executionCutoff, a queryTimeout), as Deadlock does for a
// deadlock victim: MySQL 3024 (max_execution_time), MariaDB 1969
// (max_statement_time; for the family name "mariadb"), PostgreSQL 57014
// (statement_timeout). SQL Server has no server-side cut-off: go-mssqldb
// cancels the statement when its context ends and returns
// context.DeadlineExceeded, which Cutoff returns for SQL Server.
func Cutoff(family string) error { return errorOf(family, cutoff) }

// class is a class of errors by meaning, as Deadlock and its siblings
// name them.
type class uint8

const (
	deadlock class = iota
	serialization
	lockTimeout
	failover
	throttle
	cutoff
	classCount
)

// sqlServerErrors is each class's SQL Server error number; the class,
// state and message are those of crl's table of SQL Server's errors.
// Zero: not a server error (the cut-off).
var sqlServerErrors = [classCount]int32{
	deadlock:      1205,
	serialization: 3960,
	lockTimeout:   1222,
	failover:      40197,
	throttle:      40501,
}

// sqlServerSession fills the placeholders of SQL Server's messages. The
// server's name says where the error came from.
var sqlServerSession = mssqlerrors.Session{SPID: 52, User: "sa", Database: "master", Server: "crltest"}

// mysqlError is what MySQL or MariaDB sends for an error.
type mysqlError struct {
	number  uint16
	state   string
	message string
}

// mysqlErrors is each class's error in MySQL, and in MariaDB where it
// differs (mariadb's zero value: the same).
var mysqlErrors = [classCount]struct{ mysql, mariadb mysqlError }{
	deadlock:      {mysql: mysqlError{1213, "40001", "Deadlock found when trying to get lock; try restarting transaction"}},
	serialization: {mysql: mysqlError{1213, "40001", "Deadlock found when trying to get lock; try restarting transaction"}},
	lockTimeout:   {mysql: mysqlError{1205, "HY000", "Lock wait timeout exceeded; try restarting transaction"}},
	failover: {
		mysql:   mysqlError{1290, "HY000", "The MySQL server is running with the --read-only option so it cannot execute this statement"},
		mariadb: mysqlError{1290, "HY000", "The MariaDB server is running with the --read-only option so it cannot execute this statement"},
	},
	throttle: {mysql: mysqlError{1040, "08004", "Too many connections"}},
	cutoff: {
		mysql:   mysqlError{3024, "HY000", "Query execution was interrupted, maximum statement execution time exceeded"},
		mariadb: mysqlError{1969, "70100", "Query execution was interrupted (max_statement_time exceeded)"},
	},
}

// postgresErrors is each class's error in PostgreSQL, with the fields the
// server sends (its process and transaction numbers made up). It is only
// ever copied.
var postgresErrors = [classCount]pgconn.PgError{
	deadlock: {Severity: "ERROR", Code: "40P01", Message: "deadlock detected",
		Detail: "Process 4242 waits for ShareLock on transaction 1001; blocked by process 4243.\n" +
			"Process 4243 waits for ShareLock on transaction 1000; blocked by process 4242.",
		Hint: "See server log for query details.", File: "deadlock.c", Routine: "DeadLockReport"},
	serialization: {Severity: "ERROR", Code: "40001",
		Message: "could not serialize access due to read/write dependencies among transactions",
		Detail:  "Reason code: Canceled on identification as a pivot, during commit attempt.",
		Hint:    "The transaction might succeed if retried.", File: "predicate.c", Routine: "PreCommit_CheckForSerializationFailure"},
	lockTimeout: {Severity: "ERROR", Code: "55P03", Message: "canceling statement due to lock timeout",
		File: "postgres.c", Routine: "ProcessInterrupts"},
	failover: {Severity: "ERROR", Code: "25006", Message: "cannot execute INSERT in a read-only transaction",
		File: "utility.c", Routine: "PreventCommandIfReadOnly"},
	throttle: {Severity: "FATAL", Code: "53300", Message: "sorry, too many clients already",
		File: "proc.c", Routine: "InitProcess"},
	cutoff: {Severity: "ERROR", Code: "57014", Message: "canceling statement due to statement timeout",
		File: "postgres.c", Routine: "ProcessInterrupts"},
}

// errorOf returns class c's error in the driver of the family name.
func errorOf(name string, c class) error {
	fam, ok := family.Parse(name)
	if !ok {
		return fmt.Errorf("%w %q, expected one of %s", ErrUnknownFamily, name, family.Spellings())
	}
	switch fam {
	case family.SQLServer:
		return sqlServerError(c)
	case family.MySQL:
		e := mysqlErrors[c].mysql
		if m := mysqlErrors[c].mariadb; m.number != 0 && strings.EqualFold(name, "mariadb") {
			e = m
		}
		me := &mysql.MySQLError{Number: e.number, Message: e.message}
		copy(me.SQLState[:], e.state)
		return me
	default: // family.Postgres: Parse knows no other
		pe := postgresErrors[c]
		return &pe
	}
}

// sqlServerError returns class c's error as go-mssqldb returns it: an
// mssql.Error value whose All lists it (the only error of its reply).
func sqlServerError(c class) error {
	n := sqlServerErrors[c]
	if n == 0 {
		return context.DeadlineExceeded
	}
	k, _ := mssqlerrors.Lookup(n, sqlServerSession) // TestErrorsAreTheDriversOwn: every number is in the table
	e := mssql.Error{Number: n, Class: k.Class, State: k.State, Message: k.Message,
		ServerName: sqlServerSession.Server, LineNo: 1}
	e.All = []mssql.Error{e}
	return e
}
