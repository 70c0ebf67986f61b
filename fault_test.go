package crl_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/internal/testsupport/optdriver"
)

// failFunc is a Fault of a type that == cannot compare (removing it must
// not panic): it fails what err returns an error for, and tells seen of
// every statement it fails.
type failFunc struct {
	err  func(config.FaultStatement) error
	seen func(config.FaultStatement)
}

func (f failFunc) Fail(s config.FaultStatement) error {
	err := f.err(s)
	if err != nil && f.seen != nil {
		f.seen(s)
	}
	return err
}

func (f failFunc) Matches(s config.FaultStatement) bool { return f.err(s) != nil }

// errInjected is the error the tests' faults inject.
var errInjected = errors.New("injected")

// faultPool opens a crl pool of one connection over an in-memory driver
// with every optional interface (skipArgs: its connection answers
// driver.ErrSkip to a statement with arguments) and returns its
// Runtime, which holds its faults.
func faultPool(t *testing.T, skipArgs bool) (*sql.DB, *optdriver.Driver, *config.Runtime) {
	t.Helper()
	d := optdriver.New(optdriver.ConnSets-1, optdriver.StmtSets-1, skipArgs)
	db, err := crl.OpenDB(d, "optdriver", crl.WithRetryExec("{1205:3,0+0}"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	rt, ok := crl.RuntimeOf(db)
	require.True(t, ok)
	return db, d, rt
}

// Every statement and every COMMIT asks the faults first, with what it is;
// what a fault fails never reaches the driver.
func TestFaultSeesEveryStatement(t *testing.T) {
	for _, skipArgs := range []bool{false, true} {
		t.Run(fmt.Sprintf("skipArgs=%t", skipArgs), func(t *testing.T) {
			db, d, c := faultPool(t, skipArgs)
			ctx := context.Background()
			var mu sync.Mutex
			var seen []config.FaultStatement
			remove := c.AddFault(failFunc{
				err: func(config.FaultStatement) error { return errInjected },
				seen: func(s config.FaultStatement) {
					mu.Lock()
					seen = append(seen, s)
					mu.Unlock()
				},
			})
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

			assert.Equal(t, []config.FaultStatement{
				{Query: "EXEC ?", Kind: config.StatementExec},
				{Query: "QUERY", Kind: config.StatementQuery},
				{Query: "STMT ?", Kind: config.StatementExec},
				{Query: "STMT ?", Kind: config.StatementQuery},
				{Query: "EXEC", Kind: config.StatementExec, InTx: true},
				{Query: "COMMIT", Kind: config.StatementCommit, InTx: true},
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
	removeFirst := c.AddFault(failFunc{err: func(s config.FaultStatement) error {
		if s.Query == "ONE" {
			return errFirst
		}
		return nil
	}})
	removeSecond := c.AddFault(failFunc{err: func(config.FaultStatement) error { return errSecond }})
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
				c.AddFault(failFunc{err: func(config.FaultStatement) error { return nil }})()
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

// deadlock is an error that the pools' rule retries (1205).
type deadlock struct{}

func (deadlock) Error() string         { return "deadlock" }
func (deadlock) SQLErrorNumber() int32 { return 1205 }

// countdown fails the first n statements it is asked about.
type countdown struct{ left *atomic.Int64 }

func (c countdown) Fail(config.FaultStatement) error {
	if c.left.Add(-1) < 0 {
		return nil
	}
	return deadlock{}
}

func (c countdown) Matches(config.FaultStatement) bool { return c.left.Load() > 0 }

// executed is a line of the driver's record of an execution.
var executed = regexp.MustCompile(`(Exec|Query)(Context)? "`)

// A statement with arguments that a fault fails is retried, and then
// runs once, whether the driver runs such a statement itself or answers
// driver.ErrSkip (database/sql prepares it then).
func TestFaultRetriedWithArguments(t *testing.T) {
	for _, skipArgs := range []bool{false, true} {
		t.Run(fmt.Sprintf("skipArgs=%t", skipArgs), func(t *testing.T) {
			db, d, c := faultPool(t, skipArgs)
			ctx := context.Background()
			for _, q := range []string{"UPDATE ?", "SELECT ?"} {
				left := &atomic.Int64{}
				left.Store(2)
				remove := c.AddFault(countdown{left})
				var err error
				if q == "UPDATE ?" {
					_, err = db.ExecContext(ctx, q, 1)
				} else {
					var rows *sql.Rows
					if rows, err = db.QueryContext(ctx, q, 1); err == nil {
						for rows.Next() {
						}
						err = errors.Join(rows.Err(), rows.Close())
					}
				}
				require.NoError(t, err, q)
				remove()
			}
			ran := 0
			for _, l := range d.Log() {
				if executed.MatchString(l) {
					ran++
				}
			}
			assert.Equal(t, 2, ran, "each ran once: %q", d.Log())
		})
	}
}
