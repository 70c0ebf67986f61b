package benchmarks

import (
	"context"
	"database/sql"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
)

// TestWrappersAllocateNothingMore counts the allocations of one successful
// statement through each adapter and through the library it wraps, on the
// in-memory driver: the wrappers' success path allocates nothing of its
// own. sqlxcrl is compared with sqlx over the same crl pool (the driver
// layer's own cost is BenchmarkDriverLayer's); its whole reads (Get,
// Select) run as one attempt in a unit of their own, which costs
// wholeRead allocation more than sqlx's over the driver layer alone (the
// unit, which lives in the context that carries it). The GORM plugin's
// reads (First) are the driver layer's alone, so they cost what GORM's
// over the same crl pool do.
// (Counts, not times: a test may assert them.) GORM's Create, Update
// and Delete are not here: their unit copies the values GORM writes to
// before the first attempt, so that a retry starts from them
// (docs/benchmarks.md gives the count).
func TestWrappersAllocateNothingMore(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts; CI runs this test without it too")
	}
	ctx := context.Background()
	_, crl := sqlxPair(t)
	plain := sqlx.NewDb(crl.DB.DB, "mysql")
	const wholeRead = 1
	const update = "UPDATE accounts SET balance = balance + 1 WHERE id = 1"
	const query = "SELECT id, name FROM orders WHERE id = 7"
	// The plugin against GORM alone over the same crl pool: what the
	// plugin adds (the driver layer's own cost is TestDriverLayer…'s).
	pool := crlMemDB(t)
	gPlain, gCRL := gormOver(t, pool, false), gormOver(t, pool, true)
	for _, c := range []struct {
		name       string
		plain, crl func() error
	}{
		{"sqlx ExecContext",
			func() error { _, err := plain.ExecContext(ctx, update); return err },
			func() error { _, err := crl.ExecContext(ctx, update); return err }},
		{"sqlx QueryxContext",
			func() error { return readAll(plain.QueryxContext(ctx, query)) },
			func() error { return readAll(crl.QueryxContext(ctx, query)) }},
		{"sqlx GetContext",
			func() error { var o Order; return plain.GetContext(ctx, &o, query) },
			func() error { var o Order; return crl.GetContext(ctx, &o, query) }},
		{"sqlx SelectContext",
			func() error { var o []Order; return plain.SelectContext(ctx, &o, query) },
			func() error { var o []Order; return crl.SelectContext(ctx, &o, query) }},
		{"sqlx NamedExecContext",
			func() error { _, err := plain.NamedExecContext(ctx, update, map[string]any{}); return err },
			func() error { _, err := crl.NamedExecContext(ctx, update, map[string]any{}); return err }},
		{"gorm First",
			func() error { var o Order; return gPlain.First(&o, 7).Error },
			func() error { var o Order; return gCRL.First(&o, 7).Error }},
		{"gorm Raw Scan",
			func() error { var o Order; return gPlain.Raw(query).Scan(&o).Error },
			func() error { var o Order; return gCRL.Raw(query).Scan(&o).Error }},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, c.plain())
			require.NoError(t, c.crl())
			want := testing.AllocsPerRun(100, func() { _ = c.plain() })
			got := testing.AllocsPerRun(100, func() { _ = c.crl() })
			if c.name == "sqlx GetContext" || c.name == "sqlx SelectContext" {
				want += wholeRead
			}
			assert.Equal(t, want, got, "allocations per statement: plain %v, with crl %v", want, got)
		})
	}
}

// readAll reads rows to the end and closes them.
func readAll(rows interface {
	Next() bool
	Close() error
	Err() error
}, err error) error {
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return err
	}
	return rows.Close()
}

// TestDriverLayerStatementsAllocateNothingMore counts the allocations of one
// successful statement through crl's driver layer (crl.OpenDB, with its
// default settings and with rules) and through database/sql alone, over
// the same in-memory connector (the pools of BenchmarkDriverLayer): every
// kind of statement (Exec, Query, QueryRow, a prepared statement's Exec
// and Query, each with database/sql's argument checks and its reset and
// validation of the connection) allocates nothing more; nor does any call
// of BenchmarkDriverLayerConn on the driver connection itself. A query's
// rows and the first row that the layer reads inside its statement loop
// are the connection's own, reused from one query to the next.
func TestDriverLayerStatementsAllocateNothingMore(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts; CI runs this test without it too")
	}
	ctx := context.Background()
	pools := layerPools(t)
	require.Equal(t, "plain", pools[0].name)
	for _, st := range layerStatements {
		t.Run(st.name, func(t *testing.T) {
			plain := st.prepare(t, pools[0].db)
			require.NoError(t, plain(ctx))
			base := testing.AllocsPerRun(100, func() { _ = plain(ctx) })
			for _, p := range pools[1:] {
				if p.name == "otelsql" {
					continue // the peer, not under test
				}
				run := st.prepare(t, p.db)
				require.NoError(t, run(ctx), p.name)
				got := testing.AllocsPerRun(100, func() { _ = run(ctx) })
				assert.Equal(t, base, got, "%s: allocations per statement: plain %v, %s %v", st.name, base, p.name, got)
			}
		})
	}
	for _, op := range layerConnOps {
		t.Run("Conn/"+op.name, func(t *testing.T) {
			counts := map[string]float64{}
			for _, p := range pools {
				if p.name == "otelsql" {
					continue
				}
				conn, err := p.db.Conn(ctx)
				require.NoError(t, err)
				require.NoError(t, conn.Raw(func(dc any) error {
					if err := op.run(ctx, dc); err != nil {
						return err
					}
					counts[p.name] = testing.AllocsPerRun(100, func() { _ = op.run(ctx, dc) })
					return nil
				}), p.name)
				require.NoError(t, conn.Close())
			}
			for name, got := range counts {
				assert.Equal(t, counts["plain"], got, "%s: allocations per call: plain %v, %s %v", op.name, counts["plain"], name, got)
			}
		})
	}
}

// TestDriverLayerTxAllocatesNothingMore counts the allocations of one
// transaction (BenchmarkDriverLayerTx's: BEGIN, an Exec whose result's
// counts are read, a QueryRow scanned, COMMIT) through database/sql alone
// and through crl's driver layer, with transaction replay on (its
// default: every statement recorded, with its arguments and the digest
// of what was read) and off: recording allocates nothing per statement.
// The record's arrays are the connection's, reused by its next
// transaction; an exec's result, which the caller may keep past the
// transaction, comes from a chunk of results the connection allocates
// once for many execs (an allocation every few dozen execs, below what
// AllocsPerRun counts per run); only a []byte argument is copied, an
// allocation of its own, which these statements do not have.
func TestDriverLayerTxAllocatesNothingMore(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts; CI runs this test without it too")
	}
	ctx := context.Background()
	noReplay, err := crl.OpenDB(memConnector{}, "crlmem", config.WithTxReplay(false))
	require.NoError(t, err)
	t.Cleanup(func() { noReplay.Close() })
	pools := append(layerPools(t)[:2], layerPool{"crl-noreplay", noReplay})
	require.Equal(t, "plain", pools[0].name)
	run := func(db *sql.DB) error { return layerTx(ctx, db, true) }
	// database/sql starts a goroutine per transaction (Tx.awaitDone),
	// which allocates when the runtime has no ended one at hand: for a
	// while every transaction may pay it, whichever pool runs, so each
	// count is the least of rounds that take the pools in turn.
	counts := map[string]float64{}
	for _, p := range pools {
		require.NoError(t, run(p.db), p.name)
		require.NoError(t, layerTx(ctx, p.db, false), p.name)
	}
	least := func(name string, f func()) {
		n := testing.AllocsPerRun(200, f)
		if old, ok := counts[name]; !ok || n < old {
			counts[name] = n
		}
	}
	for range 5 {
		for _, p := range pools {
			least(p.name, func() { _ = run(p.db) })
			least(p.name+"/unread", func() { _ = layerTx(ctx, p.db, false) })
		}
	}
	t.Log(counts)
	for _, p := range pools[1:] {
		assert.Equal(t, counts["plain"], counts[p.name], "%s: allocations per transaction: plain %v", p.name, counts["plain"])
		assert.Equal(t, counts["plain/unread"], counts[p.name+"/unread"], "%s, counts unread: plain %v", p.name, counts["plain/unread"])
	}
}
