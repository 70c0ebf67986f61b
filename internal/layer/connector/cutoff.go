package connector

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strconv"
	"time"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/tables/family"
)

// unknownSystemVariable is MySQL's and MariaDB's error 1193.
const unknownSystemVariable = 1193

// withCutoff wraps inner so that every new connection tells the server
// to stop a statement that runs longer than cutoff: MariaDB's
// max_statement_time, else MySQL's max_execution_time (which applies to
// SELECT only); PostgreSQL's statement_timeout. For SQL Server it returns
// inner unchanged: go-mssqldb cancels a statement on the server (ATTENTION)
// when its context ends. Another driver is an error.
func withCutoff(fam family.Family, inner driver.Connector, cutoff time.Duration) (driver.Connector, error) {
	switch fam {
	case family.SQLServer:
		return inner, nil
	case family.MySQL:
		secs := strconv.FormatFloat(cutoff.Seconds(), 'f', -1, 64)
		ms := strconv.FormatInt(max(cutoff.Milliseconds(), 1), 10)
		return &cutoffConnector{Connector: inner, statements: []string{
			"SET SESSION max_statement_time = " + secs, // MariaDB
			"SET SESSION max_execution_time = " + ms,   // MySQL, when MariaDB's is unknown
		}}, nil
	case family.Postgres:
		ms := strconv.FormatInt(max(cutoff.Milliseconds(), 1), 10)
		return &cutoffConnector{Connector: inner, statements: []string{"SET statement_timeout = " + ms}}, nil
	}
	return nil, fmt.Errorf("executionCutoff is not supported for this driver (family %s): expected one of the sqlserver, mysql or postgres family, or name the family with config.WithDriverFamily", fam)
}

// cutoffConnector runs the first of its statements that the server knows
// on every new connection.
type cutoffConnector struct {
	driver.Connector
	statements []string
}

func (c *cutoffConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	for i, stmt := range c.statements {
		err = execOn(ctx, conn, stmt)
		if err == nil {
			return conn, nil
		}
		if n, ok := core.ErrorNumber(err); !ok || n != unknownSystemVariable || i == len(c.statements)-1 {
			break
		}
	}
	if cerr := conn.Close(); cerr != nil {
		return nil, fmt.Errorf("set the execution cut-off: %w (and close: %w)", err, cerr)
	}
	return nil, fmt.Errorf("set the execution cut-off: %w", err)
}

// Close closes the wrapped connector when it can be closed.
func (c *cutoffConnector) Close() error {
	if cl, ok := c.Connector.(interface{ Close() error }); ok {
		return cl.Close()
	}
	return nil
}

// execOn runs stmt on conn, through a prepared statement when the driver
// cannot run it directly.
func execOn(ctx context.Context, conn driver.Conn, stmt string) (err error) {
	if ex, ok := conn.(driver.ExecerContext); ok {
		_, err := ex.ExecContext(ctx, stmt, nil)
		if err != driver.ErrSkip {
			return err
		}
	}
	st, err := conn.Prepare(stmt)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if sc, ok := st.(driver.StmtExecContext); ok {
		_, err = sc.ExecContext(ctx, nil)
		return err
	}
	_, err = st.Exec(nil) //nolint:staticcheck // the fallback for drivers without StmtExecContext
	return err
}
