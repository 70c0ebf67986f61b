package crl

import (
	"context"
	"database/sql/driver"
)

// Which optional interfaces a connection of the layer offers database/sql.
//
// database/sql decides some things by which interfaces a connection has,
// before any of their methods can answer. With ExecerContext or Execer
// (QueryerContext or Queryer) it converts a statement's arguments with no
// prepared statement (the connection's NamedValueChecker, else its default
// converter) and refuses one that only a statement's ColumnConverter
// knows, before the call could answer driver.ErrSkip. With both
// SessionResetter and Validator it keeps a connection whose transaction's
// context ended, else it closes it. So the layer's connection has these
// four exactly when the driver's has them (ExecerContext for the driver's
// Execer too, as for QueryerContext: the layer needs the context).
//
// The others it always has, answering as database/sql does without them:
// ConnPrepareContext and ConnBeginTx (the layer needs the context: a unit,
// a transaction's deadline; without the driver's, the layer runs
// database/sql's own fallback), NamedValueChecker (driver.ErrSkip takes
// database/sql to the converter it uses when there is none), Pinger (nil,
// what no ping returns). A prepared statement (stmt.go) has a
// ColumnConverter exactly when the driver's has one, and always
// StmtExecContext and StmtQueryContext (the context again) and
// NamedValueChecker (the driver statement's check, else its connection's,
// else driver.ErrSkip: database/sql's own order). The connection below is
// replaced only by one of the same connector (revive), so the choice, made
// once per connection, holds; where it would not, conn's methods still
// answer as database/sql does without an interface.

// The optional interfaces whose presence alone changes what database/sql
// does, as bits of a connection's set.
const (
	offersExec     = 1 << iota // driver.ExecerContext (the driver's ExecerContext or Execer)
	offersQuery                // driver.QueryerContext (the driver's QueryerContext or Queryer)
	offersReset                // driver.SessionResetter
	offersValidate             // driver.Validator
)

// offeredBy returns the set of those interfaces that inner offers.
func offeredBy(inner driver.Conn) int {
	var set int
	if _, ok := inner.(driver.ExecerContext); ok {
		set |= offersExec
	} else if _, ok := inner.(driver.Execer); ok { //nolint:staticcheck // database/sql's fallback too
		set |= offersExec
	}
	if _, ok := inner.(driver.QueryerContext); ok {
		set |= offersQuery
	} else if _, ok := inner.(driver.Queryer); ok { //nolint:staticcheck // database/sql's fallback too
		set |= offersQuery
	}
	if _, ok := inner.(driver.SessionResetter); ok {
		set |= offersReset
	}
	if _, ok := inner.(driver.Validator); ok {
		set |= offersValidate
	}
	return set
}

// offer returns what database/sql gets for cn: cn under a type whose
// method set is cn's, less the optional interfaces that cn's driver
// connection lacks and whose presence database/sql looks at.
func offer(cn *conn) driver.Conn { return offers[offeredBy(cn.inner)](partsOf(cn)) }

// The parts a connection type is made of: each is a conn under another
// name that has only its interface's methods, passed on to the conn's.
type (
	connBase      conn // driver.Conn, ConnPrepareContext, ConnBeginTx, NamedValueChecker, Pinger; Unwrap's driverConn
	connExecer    conn // driver.ExecerContext
	connQueryer   conn // driver.QueryerContext
	connResetter  conn // driver.SessionResetter
	connValidator conn // driver.Validator
)

// The connection types, one per set: E ExecerContext, Q QueryerContext,
// R SessionResetter, V Validator. The set without any is *connBase; the
// set of all four is *conn itself, which has every method: go-mssqldb's
// and go-sql-driver/mysql's connections have all four, so nothing stands
// between database/sql and the layer's methods for them.
type (
	connE struct {
		*connBase
		*connExecer
	}
	connQ struct {
		*connBase
		*connQueryer
	}
	connEQ struct {
		*connBase
		*connExecer
		*connQueryer
	}
	connR struct {
		*connBase
		*connResetter
	}
	connER struct {
		*connBase
		*connExecer
		*connResetter
	}
	connQR struct {
		*connBase
		*connQueryer
		*connResetter
	}
	connEQR struct {
		*connBase
		*connExecer
		*connQueryer
		*connResetter
	}
	connV struct {
		*connBase
		*connValidator
	}
	connEV struct {
		*connBase
		*connExecer
		*connValidator
	}
	connQV struct {
		*connBase
		*connQueryer
		*connValidator
	}
	connEQV struct {
		*connBase
		*connExecer
		*connQueryer
		*connValidator
	}
	connRV struct {
		*connBase
		*connResetter
		*connValidator
	}
	connERV struct {
		*connBase
		*connExecer
		*connResetter
		*connValidator
	}
	connQRV struct {
		*connBase
		*connQueryer
		*connResetter
		*connValidator
	}
)

// offers holds, for each set of offersExec, offersQuery, offersReset and
// offersValidate, the connection type database/sql gets.
var offers = [...]func(p parts) driver.Conn{
	0:                                      func(p parts) driver.Conn { return p.b },
	offersExec:                             func(p parts) driver.Conn { return connE{p.b, p.e} },
	offersQuery:                            func(p parts) driver.Conn { return connQ{p.b, p.q} },
	offersExec | offersQuery:               func(p parts) driver.Conn { return connEQ{p.b, p.e, p.q} },
	offersReset:                            func(p parts) driver.Conn { return connR{p.b, p.r} },
	offersExec | offersReset:               func(p parts) driver.Conn { return connER{p.b, p.e, p.r} },
	offersQuery | offersReset:              func(p parts) driver.Conn { return connQR{p.b, p.q, p.r} },
	offersExec | offersQuery | offersReset: func(p parts) driver.Conn { return connEQR{p.b, p.e, p.q, p.r} },
	offersValidate:                         func(p parts) driver.Conn { return connV{p.b, p.v} },
	offersExec | offersValidate:            func(p parts) driver.Conn { return connEV{p.b, p.e, p.v} },
	offersQuery | offersValidate:           func(p parts) driver.Conn { return connQV{p.b, p.q, p.v} },
	offersExec | offersQuery | offersValidate:               func(p parts) driver.Conn { return connEQV{p.b, p.e, p.q, p.v} },
	offersReset | offersValidate:                            func(p parts) driver.Conn { return connRV{p.b, p.r, p.v} },
	offersExec | offersReset | offersValidate:               func(p parts) driver.Conn { return connERV{p.b, p.e, p.r, p.v} },
	offersQuery | offersReset | offersValidate:              func(p parts) driver.Conn { return connQRV{p.b, p.q, p.r, p.v} },
	offersExec | offersQuery | offersReset | offersValidate: func(p parts) driver.Conn { return p.cn },
}

// parts are one conn as itself and as each of its parts.
type parts struct {
	cn *conn
	b  *connBase
	e  *connExecer
	q  *connQueryer
	r  *connResetter
	v  *connValidator
}

func partsOf(cn *conn) parts {
	return parts{cn, (*connBase)(cn), (*connExecer)(cn), (*connQueryer)(cn), (*connResetter)(cn), (*connValidator)(cn)}
}

var (
	_ driver.Conn               = (*connBase)(nil)
	_ driver.ConnPrepareContext = (*connBase)(nil)
	_ driver.ConnBeginTx        = (*connBase)(nil)
	_ driver.NamedValueChecker  = (*connBase)(nil)
	_ driver.Pinger             = (*connBase)(nil)
	_ driver.ExecerContext      = (*connExecer)(nil)
	_ driver.QueryerContext     = (*connQueryer)(nil)
	_ driver.SessionResetter    = (*connResetter)(nil)
	_ driver.Validator          = (*connValidator)(nil)
)

// Prepare is conn's.
func (c *connBase) Prepare(query string) (driver.Stmt, error) { return (*conn)(c).Prepare(query) }

// PrepareContext is conn's.
func (c *connBase) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return (*conn)(c).PrepareContext(ctx, query)
}

// Begin is conn's.
func (c *connBase) Begin() (driver.Tx, error) { return (*conn)(c).Begin() }

// BeginTx is conn's.
func (c *connBase) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return (*conn)(c).BeginTx(ctx, opts)
}

// CheckNamedValue is conn's.
func (c *connBase) CheckNamedValue(nv *driver.NamedValue) error {
	return (*conn)(c).CheckNamedValue(nv)
}

// Ping is conn's.
func (c *connBase) Ping(ctx context.Context) error { return (*conn)(c).Ping(ctx) }

// Close is conn's.
func (c *connBase) Close() error { return (*conn)(c).Close() }

// driverConn is conn's, for Unwrap.
func (c *connBase) driverConn() driver.Conn { return (*conn)(c).driverConn() }

// ExecContext is conn's.
func (c *connExecer) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return (*conn)(c).ExecContext(ctx, query, args)
}

// QueryContext is conn's.
func (c *connQueryer) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return (*conn)(c).QueryContext(ctx, query, args)
}

// ResetSession is conn's.
func (c *connResetter) ResetSession(ctx context.Context) error {
	return (*conn)(c).ResetSession(ctx)
}

// IsValid is conn's.
func (c *connValidator) IsValid() bool { return (*conn)(c).IsValid() }
