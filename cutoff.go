package crl

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strings"
	"time"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/tables/family"
)

// withCutoff wraps inner so that every new connection tells the server
// to stop a statement that runs longer than cutoff, with the first of
// the family's cut-off statements that the server knows (MariaDB's
// max_statement_time, else MySQL's max_execution_time, which applies to
// SELECT only; PostgreSQL's statement_timeout). Where the driver stops
// a statement on the server itself when its context ends (go-mssqldb's
// ATTENTION), it returns inner unchanged. A family without a cut-off is an
// error.
func withCutoff(fam family.Family, inner driver.Connector, cutoff time.Duration) (driver.Connector, error) {
	p := fam.Profile()
	if p.CutoffByDriver {
		return inner, nil
	}
	if p.Cutoff == nil {
		return nil, fmt.Errorf("executionCutoff is not supported for this driver (family %s): expected one of the %s family, or name the family with config.WithDriverFamily", fam, cutoffFamilies())
	}
	return &cutoffConnector{Connector: inner, statements: p.Cutoff(cutoff), unknown: p.CutoffUnknown}, nil
}

// cutoffFamilies names the families that have an execution cut-off.
func cutoffFamilies() string {
	var names []string
	for _, f := range family.All() {
		if p := f.Profile(); p.CutoffByDriver || p.Cutoff != nil {
			names = append(names, f.String())
		}
	}
	return strings.Join(names, ", ")
}

// cutoffConnector runs the first of its statements that the server knows
// on every new connection.
type cutoffConnector struct {
	driver.Connector
	statements []string
	unknown    int32 // the error number of a statement the server does not know: try the next
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
		if n, ok := core.ErrorNumber(err); !ok || n != c.unknown || c.unknown == 0 || i == len(c.statements)-1 {
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
