package crl_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/conformance"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/gormcrl"
	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

// unitPools is one crl pool seen through each helper's handle:
// database/sql's, sqlx's (sqlxcrl) and GORM's (GORM's own sqlserver
// dialector over the pool, no plugin).
type unitPools struct {
	db *sql.DB
	x  *sqlxcrl.DB
	g  *gorm.DB
}

// openUnitPools opens a crl pool on srv under rules, its events told to
// o, and the handles over it.
func openUnitPools(t *testing.T, srv *mssqltest.Server, rules string, o *coretest.Observer) unitPools {
	t.Helper()
	// txReplay=off: the helpers' own loops are under test (with replay,
	// the driver layer replays a transaction before a helper re-runs it).
	db, _ := open(t, srv, "&txReplay=off", crl.WithRetryExec(rules), config.WithObserver(o))
	g, err := gorm.Open(sqlserver.New(sqlserver.Config{Conn: db}), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	return unitPools{db: db, x: sqlxcrl.NewDb(db, "sqlserver"), g: g}
}

// unitHelper is one of the helpers that run a unit of work and retry it
// whole. run runs fn as one unit over p with ctx: fn gets the context the
// helper's closure has (ctx when the closure has none) and exec, which
// runs a statement in the unit.
type unitHelper struct {
	name   string
	hasCtx bool // the closure has a context of its own: the unit's
	inTx   bool // exec runs in the helper's transaction (else in autocommit)
	run    func(ctx context.Context, p unitPools, fn func(ctx context.Context, exec func(query string) error) error) error
}

var unitHelpers = []unitHelper{
	{"crl.RunInTx", false, true, func(ctx context.Context, p unitPools, fn func(context.Context, func(string) error) error) error {
		return crl.RunInTx(ctx, p.db, nil, func(tx *sql.Tx) error {
			return fn(ctx, func(q string) error { _, err := tx.ExecContext(ctx, q); return err })
		})
	}},
	{"sqlxcrl.RunInTxx", false, true, func(ctx context.Context, p unitPools, fn func(context.Context, func(string) error) error) error {
		return sqlxcrl.RunInTxx(ctx, p.x.DB, nil, func(tx *sqlx.Tx) error {
			return fn(ctx, func(q string) error { _, err := tx.ExecContext(ctx, q); return err })
		})
	}},
	{"sqlxcrl.DB.RunInTx", false, true, func(ctx context.Context, p unitPools, fn func(context.Context, func(string) error) error) error {
		return p.x.RunInTx(ctx, nil, func(tx *sqlxcrl.Tx) error {
			return fn(ctx, func(q string) error { _, err := tx.ExecContext(ctx, q); return err })
		})
	}},
	{"gormcrl.Transaction", true, true, func(ctx context.Context, p unitPools, fn func(context.Context, func(string) error) error) error {
		return gormcrl.Transaction(p.g.WithContext(ctx), func(tx *gorm.DB) error {
			return fn(tx.Statement.Context, func(q string) error { return tx.Exec(q).Error })
		})
	}},
	{"crl.Retry", true, false, func(ctx context.Context, p unitPools, fn func(context.Context, func(string) error) error) error {
		return crl.Retry(ctx, func(ctx context.Context) error {
			return fn(ctx, func(q string) error { _, err := p.db.ExecContext(ctx, q); return err })
		})
	}},
}

// nesting is a unit helper called inside another's closure.
type nesting struct {
	name         string
	outer, inner unitHelper
	closureCtx   bool // the inner call gets the outer closure's context, not the caller's
}

// nestings returns every nesting of the unit helpers: the inner call
// with the caller's context, and with the outer closure's where it has
// one of its own.
func nestings() []nesting {
	var out []nesting
	for _, outer := range unitHelpers {
		for _, inner := range unitHelpers {
			out = append(out, nesting{outer.name + "/" + inner.name + "/caller's ctx", outer, inner, false})
			if outer.hasCtx {
				out = append(out, nesting{outer.name + "/" + inner.name + "/closure's ctx", outer, inner, true})
			}
		}
	}
	return out
}

// run runs the outer unit, whose closure runs its own statement and then
// the inner unit, which runs update.
func (n nesting) run(ctx context.Context, p unitPools) error {
	return n.outer.run(ctx, p, func(octx context.Context, exec func(string) error) error {
		if err := exec(insert); err != nil {
			return err
		}
		ictx := ctx
		if n.closureCtx {
			ictx = octx
		}
		return n.inner.run(ictx, p, func(_ context.Context, exec func(string) error) error { return exec(update) })
	})
}

// A unit helper inside another runs one loop, whichever the two helpers
// and whichever context the inner call gets: the inner statement, always
// a deadlock victim, runs 1 + retryCount times (never more), each retry
// is one RetryScheduled and the loop that gives up is the only one to say
// so; the error is still the driver's. With the caller's context the inner
// unit is a transaction of its own and its loop runs the retries (the
// outer returns its give-up after one run); with the outer closure's
// context it runs once in each run of the outer unit.
func TestNestedUnitsRunOneLoop(t *testing.T) {
	for _, n := range nestings() {
		t.Run(n.name, func(t *testing.T) {
			srv := mssqltest.NewServer(t)
			obs := &coretest.Observer{}
			p := openUnitPools(t, srv, "{1205:2,1}", obs)
			srv.Handle(update, mssqltest.Error(1205))
			err := n.run(context.Background(), p)
			requireNumber(t, err, 1205)
			assert.Equal(t, 3, srv.Count(update), "1 + retryCount executions: one loop, its count whole")
			outerRuns := 1 // the inner unit's own loop ran the retries
			if n.closureCtx {
				outerRuns = 3 // the inner call ran once in each run of the outer unit
			}
			assert.Equal(t, outerRuns, srv.Count(insert), "runs of the outer unit")
			ev := obs.Snapshot()
			assert.Len(t, ev.Retries, 2, "one RetryScheduled a re-run")
			assert.Len(t, ev.GiveUps, 1, "one loop gave up")
		})
	}
}

// A nested unit whose statement fails twice and then succeeds: every
// transaction of the nesting commits once, with its statements once, and
// one loop tells of the retries.
func TestNestedUnitsCommitOnceAfterRetries(t *testing.T) {
	for _, n := range nestings() {
		t.Run(n.name, func(t *testing.T) {
			srv := mssqltest.NewServer(t)
			obs := &coretest.Observer{}
			p := openUnitPools(t, srv, "{1205:2,1}", obs)
			srv.Handle(update, mssqltest.Error(1205), mssqltest.Error(1205), mssqltest.Affected(1))
			require.NoError(t, n.run(context.Background(), p))
			assert.Equal(t, 3, srv.Count(update))
			ev := obs.Snapshot()
			assert.Len(t, ev.Retries, 2, "one RetryScheduled a re-run")
			assert.Len(t, ev.Successes, 1, "one loop succeeded after retries")
			assert.Empty(t, ev.GiveUps)
			want := [][]string{} // the inner unit commits first
			if n.inner.inTx {
				want = append(want, []string{update})
			}
			if n.outer.inTx {
				want = append(want, []string{insert})
			}
			assert.Equal(t, want, srv.Committed(), "each transaction committed once")
		})
	}
}

// crl.RunInTx and crl.Retry over a pool sql.Open opened, on MariaDB and
// PostgreSQL: each runs its unit once, commits what it did, and returns
// the unit's error as it is (the driver's own value, or the caller's).
func TestHelpersOverAForeignPool(t *testing.T) {
	conformance.EachDatabase(t, func(t *testing.T, d conformance.Database) {
		raw, err := sql.Open(d.Driver, d.DSN)
		require.NoError(t, err)
		t.Cleanup(func() { raw.Close() })
		table := fmt.Sprintf("crlforeign_%d", rand.Uint32())
		_, err = raw.Exec("CREATE TABLE " + table + " (id INT PRIMARY KEY)")
		require.NoError(t, err)
		t.Cleanup(func() { _, _ = raw.Exec("DROP TABLE IF EXISTS " + table) })
		count := func(id int) (n int) {
			require.NoError(t, raw.QueryRow(fmt.Sprintf("SELECT count(*) FROM %s WHERE id = %d", table, id)).Scan(&n))
			return n
		}
		helpers := map[string]func(ctx context.Context, fn func(exec func(q string) error) error) error{
			"crl.RunInTx": func(ctx context.Context, fn func(func(string) error) error) error {
				return crl.RunInTx(ctx, raw, nil, func(tx *sql.Tx) error {
					return fn(func(q string) error { _, err := tx.ExecContext(ctx, q); return err })
				})
			},
			"crl.Retry": func(ctx context.Context, fn func(func(string) error) error) error {
				return crl.Retry(ctx, func(ctx context.Context) error {
					tx, err := raw.BeginTx(ctx, nil)
					if err != nil {
						return err
					}
					if err := fn(func(q string) error { _, err := tx.ExecContext(ctx, q); return err }); err != nil {
						_ = tx.Rollback()
						return err
					}
					return tx.Commit()
				})
			},
		}
		id := 0
		for name, run := range helpers {
			t.Run(name, func(t *testing.T) {
				id += 10
				ctx := context.Background()
				insert := fmt.Sprintf("INSERT INTO %s (id) VALUES (%d)", table, id)
				runs := 0
				require.NoError(t, run(ctx, func(exec func(string) error) error { runs++; return exec(insert) }))
				assert.Equal(t, 1, runs, "runs")
				assert.Equal(t, 1, count(id), "committed")

				var seen error
				runs = 0
				err := run(ctx, func(exec func(string) error) error { runs++; seen = exec(insert); return seen })
				require.Error(t, seen, "a duplicate key")
				assert.ErrorIs(t, err, seen)
				assert.Same(t, seen, err, "the driver's error itself")
				assert.Equal(t, 1, runs, "runs")

				mine := errors.New("mine")
				runs = 0
				err = run(ctx, func(exec func(string) error) error {
					runs++
					require.NoError(t, exec(fmt.Sprintf("INSERT INTO %s (id) VALUES (%d)", table, id+1)))
					return mine
				})
				assert.ErrorIs(t, err, mine)
				assert.Same(t, mine, err, "the closure's error itself")
				assert.Equal(t, 1, runs, "runs")
				assert.Equal(t, 0, count(id+1), "rolled back")
			})
		}
	})
}
