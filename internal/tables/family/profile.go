package family

import "time"

// Profile is everything crl does differently for one family. Each package
// that acts on a difference reads its field here: nowhere else does crl
// ask which family a handle is of. The zero value of each field is what
// crl does for a driver it does not know (Other).
type Profile struct {
	// Name is the family's own name, as WithDriverFamily and
	// Runtime.DriverFamily spell it.
	Name string
	// Aliases are the driver and dialector names of the family,
	// lower-case, Name among them: Of reads each as the family, in any
	// case.
	Aliases []string
	// Driver is the driver name whose DSN forms the family's DSNs are
	// read in; "" for Other.
	Driver string
	// DSN is how config reads the family's DSNs; DSNNotRead for Other.
	DSN DSNForm
	// Schemes are the URL schemes of the family's DSNs (scheme://…),
	// lower-case and without jdbc:, where text before "://" is a scheme
	// and not a MySQL user name (redaction reads them).
	Schemes []string
	// BindDriver is a driver name whose placeholders sqlx's BindType
	// knows (sqlserver: @p1; mysql: ?; pgx: $1), for a handle whose own
	// driver name sqlx does not know; "" for Other.
	BindDriver string
	// SystemName is the db.system.name value of the OpenTelemetry
	// database-client conventions (semconv 1.43); "" for Other, whose
	// handles the hook says other_sql of.
	SystemName string

	// CommitIgnoresContext says that the driver's Tx.Commit and
	// Tx.Rollback run without the transaction's context (database/sql
	// gives a driver's Commit none), so the driver layer ends the
	// family's transactions under their context itself. False: the
	// driver's COMMIT runs under the context given to BeginTx.
	CommitIgnoresContext bool

	// Cutoff returns the statements that set the execution cut-off d on a
	// new connection, in the order they are tried: the first the server
	// knows is used (see CutoffUnknown). Nil: the family has none, and an
	// execution cut-off is an error, unless CutoffByDriver.
	Cutoff func(d time.Duration) []string
	// CutoffByDriver says that the driver itself stops a statement on the
	// server when its context ends, so a cut-off needs no statement.
	CutoffByDriver bool
	// CutoffUnknown is the error number with which the server refuses a
	// Cutoff statement it does not know, so that the next one is tried;
	// 0: none is tried after the first failure.
	CutoffUnknown int32
	// CutoffErrors are the error tokens (numbers or SQLSTATEs, as rules
	// write them) of a statement the server's cut-off stopped: time-outs,
	// for the rules (timeout) and the retry budget (overload).
	CutoffErrors []string

	// Errors is the shape of the driver's errors, by which core tells the
	// family of an error and reads its token (OfErrors).
	Errors ErrorShape
	// Deadlock, Serialization, LockTimeout, Failover and Throttle are the
	// error tokens (numbers or SQLSTATEs, as rules write them) of each class
	// by meaning: what the rule tokens deadlock, serialization,
	// lockTimeout, failover and throttle stand for on the family, and what
	// the retry budget charges (core's class table says the cost of each).
	// An error of none of them (nor of CutoffErrors) is transient.
	//
	// Deadlock: the server chose the statement's transaction as a deadlock
	// victim and rolled it back.
	Deadlock []string
	// Serialization: the transaction could not be serialized with a
	// concurrent one (an update conflict, a validation failure) and was
	// rolled back.
	Serialization []string
	// LockTimeout: a lock wait ran out (or a NOWAIT lock was not
	// available); the server may have rolled back the statement only.
	LockTimeout []string
	// Failover: the connection reached a server that cannot serve it now
	// (read-only after a failover, a database being moved or restarted);
	// the connection leaves the pool and a retry runs on a new one. The
	// server sent the error as the statement's answer, so the statement
	// was not applied (a read-only server refused it before running it).
	Failover []string
	// Throttle: the server refused or gave up on the work for lack of a
	// resource (request or connection limits, memory, lock resources).
	Throttle []string
	// TooManyConnections is the family's error token of too many
	// connections, which crl explain gives as an example of retryConn;
	// "" when the family has none to show.
	TooManyConnections string

	// JDBCLogin says that the connection loop retries a failed login as
	// the JDBC driver's login() does: every failure it does not know to
	// be fatal, server errors no rule names included. False: a server
	// error in a login is retried only when retryConn names it.
	JDBCLogin bool
	// TransientList says that the builtin connection list
	// (core.TransientErrors, the JDBC driver's SQL Server numbers)
	// applies to the family's errors. False: only the numbers retryConn
	// names are retried.
	TransientList bool
	// PropertiesFile says that mssql-jdbc.properties is looked for
	// without an explicit path (in the working directory, next to the
	// executable). False: only a file named in code, the DSN or
	// $CRL_PROPERTIES is read.
	PropertiesFile bool
	// AzureDefaults says that connectRetryCount defaults to the JDBC
	// driver's for an Azure SQL or Synapse serverless server that the DSN
	// names.
	AzureDefaults bool

	// SimpleProtocol is the driver's DSN key=value that makes it use the
	// simple query protocol, what GORM's PreferSimpleProtocol asks for;
	// "" when the driver has none.
	SimpleProtocol string

	// TxText is how the family's statement texts begin and end
	// transactions (the driver layer's reading of BEGIN, COMMIT, SET
	// autocommit and the like).
	TxText TxText

	// EndsTx are the error tokens whose error ended the server's
	// transaction (rolled it back whole): a transaction replay re-sends
	// the transaction's statements on a new one.
	EndsTx []string
	// AnyErrorEndsTx: every error inside a transaction leaves it aborted
	// (PostgreSQL: nothing but ROLLBACK runs until it ends), so every
	// error a rule retries is replayed as EndsTx's are.
	AnyErrorEndsTx bool
	// EndsStatement are the error tokens whose error rolled back the
	// failed statement only, while LiveTx says the transaction is live:
	// that statement alone is run again inside it.
	EndsStatement []string
	// LiveTx is a query whose one value is 1 when the transaction is
	// still live after an EndsStatement error, 0 when the server rolled
	// it back whole (a server setting decides: MySQL's
	// innodb_rollback_on_timeout, SQL Server's XACT_ABORT).
	LiveTx string
}

// DSNForm is how config reads a family's DSNs.
type DSNForm uint8

// The DSN forms.
const (
	DSNNotRead       DSNForm = iota // not read: a DSN that seems to set a crl key is an error
	DSNURLOrADO                     // sqlserver://…?key=…, the ADO form key=value;…, and odbc:
	DSNMySQL                        // user:pass@tcp(host)/db?key=…
	DSNURLOrKeyValue                // postgres:// and postgresql:// URLs, and host=… key=value
)

// ErrorShape is how a driver's errors carry the server's code.
type ErrorShape uint8

// The error shapes.
const (
	NoErrors       ErrorShape = iota // none crl recognises
	NumberedErrors                   // SQLErrorNumber() int32 (go-mssqldb)
	MySQLErrors                      // *mysql.MySQLError's Number (go-sql-driver/mysql)
	SQLStateErrors                   // SQLState() string, or lib/pq's Code field (pgx, lib/pq); tokens are SQLSTATEs
	errorShapes
)

// TxText is how statement texts begin and end transactions; the driver
// layer's reading has one entry per value.
type TxText uint8

// The transaction-text dialects.
const (
	TxTextAny      TxText = iota // every way any family begins one; only COMMIT and ROLLBACK end one
	TxTextTSQL                   // T-SQL: BEGIN TRAN, nesting, IMPLICIT_TRANSACTIONS, RESETCONNECTION
	TxTextMySQL                  // MySQL: START TRANSACTION, BEGIN, autocommit, XA
	TxTextPostgres               // PostgreSQL: BEGIN, START TRANSACTION, END, ABORT, PREPARE TRANSACTION
)
