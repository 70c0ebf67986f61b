package connector_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/internal/layer/connector"
	"github.com/crl-go/crl/internal/testsupport/optdriver"
)

// failFunc is a Fault of a type that == cannot compare: removing it must
// not panic.
type failFunc func(connector.Statement) error

func (f failFunc) Fail(s connector.Statement) error { return f(s) }

// errInjected is the error the tests' faults inject.
var errInjected = errors.New("injected")

// faultPool opens a crl pool of one connection over an in-memory driver
// with every optional interface (skipArgs: its connection answers
// driver.ErrSkip to a statement with arguments) and returns its
// Connector.
func faultPool(t *testing.T, skipArgs bool) (*sql.DB, *optdriver.Driver, *connector.Connector) {
	t.Helper()
	d := optdriver.New(optdriver.ConnSets-1, optdriver.StmtSets-1, skipArgs)
	db, err := crl.OpenDB(d, "optdriver", crl.WithRetryExec("{1205:3,0+0}"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	return db, d, db.Driver().(*connector.Driver).Connector()
}

// Every statement and every COMMIT asks the faults first, with what it is;
// what a fault fails never reaches the driver.
func TestFaultSeesEveryStatement(t *testing.T) {
	for _, skipArgs := range []bool{false, true} {
		t.Run(fmt.Sprintf("skipArgs=%t", skipArgs), func(t *testing.T) {
			db, d, c := faultPool(t, skipArgs)
			ctx := context.Background()
			var mu sync.Mutex
			var seen []connector.Statement
			remove := c.AddFault(failFunc(func(s connector.Statement) error {
				mu.Lock()
				seen = append(seen, s)
				mu.Unlock()
				return errInjected
			}))
			_, err := db.ExecContext(ctx, "EXEC ?", 1)
			require.ErrorIs(t, err, errInjected)
			_, err = db.QueryContext(ctx, "QUERY")
			require.ErrorIs(t, err, errInjected)
			st, err := db.PrepareContext(ctx, "STMT ?")
			require.NoError(t, err)
			_, err = st.ExecContext(ctx, 1)
			require.ErrorIs(t, err, errInjected)
			_, err = st.QueryContext(ctx, 1)
			require.ErrorIs(t, err, errInjected)
			require.NoError(t, st.Close())
			tx, err := db.BeginTx(ctx, nil)
			require.NoError(t, err)
			_, err = tx.ExecContext(ctx, "EXEC")
			require.ErrorIs(t, err, errInjected)
			require.ErrorIs(t, tx.Commit(), errInjected)
			remove()
			remove() // again: nothing

			assert.Equal(t, []connector.Statement{
				{Query: "EXEC ?", Kind: connector.Exec},
				{Query: "QUERY", Kind: connector.Query},
				{Query: "STMT ?", Kind: connector.Exec},
				{Query: "STMT ?", Kind: connector.Query},
				{Query: "EXEC", Kind: connector.Exec, InTx: true},
				{Query: "COMMIT", Kind: connector.Commit, InTx: true},
			}, seen)
			log := d.Log()
			for _, l := range log {
				assert.NotRegexp(t, `Exec|Query|Commit`, l, "reached the driver")
			}
			assert.Regexp(t, `Rollback`, log[len(log)-1], "a COMMIT fault rolls the transaction back")

			_, err = db.ExecContext(ctx, "EXEC")
			require.NoError(t, err, "removed")
		})
	}
}

// The first fault that fails a statement wins; removing one keeps the
// others; faults are added and removed while statements run.
func TestFaultsAddAndRemove(t *testing.T) {
	db, _, c := faultPool(t, false)
	ctx := context.Background()
	errFirst, errSecond := errors.New("first"), errors.New("second")
	removeFirst := c.AddFault(failFunc(func(s connector.Statement) error {
		if s.Query == "ONE" {
			return errFirst
		}
		return nil
	}))
	removeSecond := c.AddFault(failFunc(func(connector.Statement) error { return errSecond }))
	_, err := db.ExecContext(ctx, "ONE")
	require.ErrorIs(t, err, errFirst)
	_, err = db.ExecContext(ctx, "TWO")
	require.ErrorIs(t, err, errSecond)
	removeFirst()
	_, err = db.ExecContext(ctx, "ONE")
	require.ErrorIs(t, err, errSecond)
	removeSecond()
	_, err = db.ExecContext(ctx, "ONE")
	require.NoError(t, err)

	db.SetMaxOpenConns(4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 50 {
				c.AddFault(failFunc(func(connector.Statement) error { return nil }))()
			}
		}()
		go func() {
			defer wg.Done()
			for range 50 {
				_, err := db.ExecContext(ctx, "EXEC")
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
}
