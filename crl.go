package crl

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

// Option is a setting given in code; every config.With… function is one.
// Options in code win over the DSN, which wins over the properties file.
type Option = config.Option

// WithRetryExec sets the statement rules (a retryExec value, such as
// "{1205,1222:3,2*2:select,update}").
func WithRetryExec(rules string) Option { return config.WithRetryExec(rules) }

// WithRetryConn sets the connection rules (a retryConn value, such as
// "{+4060}").
func WithRetryConn(rules string) Option { return config.WithRetryConn(rules) }

// Open opens a pool like sql.Open, with crl inside its driver:
// driverName is a registered database/sql driver ("sqlserver", "mysql",
// "pgx", …) and dsn its DSN, which may hold the retry settings
// (retryExec, retryConn, connectRetryCount, …; they are removed before
// the driver sees it). Every statement run outside a transaction is
// retried per the rules, every new connection runs the connection loop.
// It does not connect.
func Open(driverName, dsn string, opts ...Option) (*sql.DB, error) {
	rt, driverDSN, err := config.NewRuntime(driverName, dsn, opts...)
	if err != nil {
		return nil, fmt.Errorf("crl: %w", err)
	}
	return OpenRuntime(driverName, driverDSN, rt)
}

// OpenDB opens a pool like sql.OpenDB over a driver.Connector of your own
// (go-mssqldb's NewConnectorWithAccessTokenProvider, pgx's connector with
// a BeforeConnect, mysql.NewConnector), with crl inside its driver.
// driverName names the driver's family ("sqlserver", "mysql", "pgx", …;
// a wrapped name such as otelsql's needs config.WithDriverFamily). There
// is no DSN: the settings come from opts, the properties file and the
// defaults. It does not connect.
func OpenDB(c driver.Connector, driverName string, opts ...Option) (*sql.DB, error) {
	wrapped, _, err := WrapConnector(c, driverName, opts...)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(wrapped), nil
}

// RuntimeOf returns the Runtime of a pool crl opened (Open, OpenDB, a
// Register name, the adapters' Open and OpenDB): its settings, its
// Retrier, its properties file. It reports false for any other pool.
func RuntimeOf(db *sql.DB) (*config.Runtime, bool) {
	if db == nil {
		return nil, false
	}
	d, ok := db.Driver().(*layerDriver)
	if !ok || d.c.rt == nil {
		return nil, false
	}
	return d.c.rt, true
}

// Unwrap returns the driver's own connection under a connection of a
// pool crl opened, inside (*sql.Conn).Raw: go-mssqldb's *mssql.Conn,
// pgx's *stdlib.Conn, … Any other value is returned unchanged.
//
//	err := conn.Raw(func(dc any) error {
//		pgxConn := crl.Unwrap(dc).(*stdlib.Conn).Conn()
//		…
//	})
func Unwrap(driverConn any) any {
	for {
		u, ok := driverConn.(interface{ driverConn() driver.Conn })
		if !ok {
			return driverConn
		}
		driverConn = u.driverConn()
	}
}

// ErrNotCrlPool is the error of crltest.Check and crltest.Inject given a
// *sql.DB that crl did not open: its driver has no crl layer to inject a
// fault into. RunInTx and the adapters' helpers do not return it: over
// such a pool they run the unit once, as without crl.
var ErrNotCrlPool = errors.New("crl: the *sql.DB was not opened by crl; open it with crl.Open, crl.OpenDB or a crl.Register driver name")

// ErrClosureEndedTx is the error of RunInTx (and of the adapters'
// transaction helpers) when fn committed or rolled back the transaction
// itself: the helper commits when fn returns nil and rolls back when it
// returns an error. Nothing is retried; the error also matches
// sql.ErrTxDone.
var ErrClosureEndedTx = config.ErrClosureEndedTx

// ErrReplayDiverged is joined with the driver's original error when the
// driver layer's replay of a transaction stopped after it ran: an answer
// the caller had seen (a row it read, a count or insert ID it read) came
// back different, a re-sent statement failed, or the connection broke.
// The server's transaction is rolled back; errors.As still finds the
// driver's error (*mysql.MySQLError, *pgconn.PgError, mssql.Error). See
// docs/semantics.md, "Transaction replay".
var ErrReplayDiverged = core.ErrReplayDiverged
