package gormcrl_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/conformance"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/gormcrl"
)

// stormItem is written by the storm. Its hooks touch two shared counter
// rows in random order inside GORM's transaction, so that concurrent
// Creates and Updates deadlock.
type stormItem struct {
	ID       int64
	Name     string `gorm:"uniqueIndex;size:64"`
	N        int64
	counters string // the counters table
}

func (s *stormItem) touchCounters(tx *gorm.DB) error {
	a := rand.IntN(2) + 1
	for _, id := range []int{a, 3 - a} {
		if err := tx.Exec("UPDATE "+s.counters+" SET n = n + 1 WHERE id = ?", id).Error; err != nil {
			return err
		}
		time.Sleep(200 * time.Microsecond) // widen the window for lock-order deadlocks
	}
	return nil
}

func (s *stormItem) AfterCreate(tx *gorm.DB) error { return s.touchCounters(tx) }
func (s *stormItem) AfterUpdate(tx *gorm.DB) error { return s.touchCounters(tx) }

type stormCounter struct {
	ID int64
	N  int64
}

// TestRealCreateUpdateStormWithBreaker runs concurrent GORM Creates and
// Updates, each a unit whose hooks deadlock with the others', on real
// MariaDB and PostgreSQL, with the circuit breaker configured so that it
// opens and refuses operations during the storm. Afterwards the rows are
// counted: every Create that returned nil wrote its row once, every Create
// that returned an error wrote nothing, every Update that returned nil
// added one and every other added nothing, and the counters the hooks
// moved agree with the writes that committed.
func TestRealCreateUpdateStormWithBreaker(t *testing.T) {
	conformance.EachDatabase(t, func(t *testing.T, d conformance.Database) {
		rules, params := "{1213,1205:1,1ms}", ""
		if d.Name == "postgres" {
			rules, params = "{40P01,40001:1,1ms}", "deadlock_timeout=20ms"
		}
		var refused, exhausted atomic.Int64
		db, err := openGorm(d.Driver, d.With(params), gormcrl.WithRetryExec(rules),
			config.WithCircuitBreaker(core.BreakerSettings{Failures: 2, OpenFor: 10 * time.Millisecond}))
		require.NoError(t, err)
		items, counters := conformance.Table("crl_storm_items"), conformance.Table("crl_storm_counters")
		require.NoError(t, db.Table(items).Migrator().CreateTable(&stormItem{}))
		require.NoError(t, db.Table(counters).Migrator().CreateTable(&stormCounter{}))
		defer func() { _ = db.Clauses(gormcrl.NoRetry).Migrator().DropTable(items, counters) }()
		for id := int64(1); id <= 2; id++ {
			require.NoError(t, db.Table(counters).Create(&stormCounter{ID: id}).Error)
		}

		// Each worker runs perWorker units, and goes on (up to maxPerWorker)
		// while the breaker has refused none: it opens only on two
		// exhausted units in a row, which a loaded machine can interleave
		// with commits for a while.
		const workers, perWorker, maxPerWorker = 6, 20, 200
		var (
			mu      sync.Mutex
			created = map[string]bool{}  // name → the Create returned nil
			updates = map[string]int64{} // name → Updates that returned nil
			writes  atomic.Int64         // units that committed
			wg      sync.WaitGroup
		)
		judge := func(err error) bool {
			switch {
			case err == nil:
				writes.Add(1)
				return true
			case errors.Is(err, core.ErrCircuitOpen):
				refused.Add(1)
				time.Sleep(3 * time.Millisecond) // a caller backs off, so the storm sees the breaker close again
			case errors.Is(err, core.ErrRetriesExhausted):
				exhausted.Add(1)
			case errors.Is(err, core.ErrCommitUnknown):
				t.Errorf("unexpected unknown COMMIT: %v", err)
			}
			return false // every other error: the unit was rolled back
		}
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []stormItem
				for i := 0; i < perWorker || (i < maxPerWorker && refused.Load() == 0); i++ {
					if len(mine) > 0 && rand.IntN(2) == 0 {
						it := &mine[rand.IntN(len(mine))]
						it.counters = counters
						err := db.Table(items).Model(it).Update("n", gorm.Expr("n + 1")).Error
						if judge(err) {
							mu.Lock()
							updates[it.Name]++
							mu.Unlock()
						}
						continue
					}
					it := stormItem{Name: fmt.Sprintf("w%d-%d", w, i), counters: counters}
					err := db.Table(items).Create(&it).Error
					ok := judge(err)
					mu.Lock()
					created[it.Name] = ok
					mu.Unlock()
					if ok {
						mine = append(mine, it)
					}
				}
			}()
		}
		wg.Wait()

		// Count through plain GORM over the plain driver: crl's breaker
		// may still be open (a diverged replay counts as a failure), and
		// it refuses even a statement run without retries.
		check, err := gorm.Open(dialectors[d.Driver](d.With(params)), &gorm.Config{Logger: logger.Discard})
		require.NoError(t, err)
		if sqlDB, err := check.DB(); err == nil {
			defer sqlDB.Close()
		}
		var rows []stormItem
		require.NoError(t, check.Table(items).Find(&rows).Error)
		inDB := map[string]int64{}
		for _, r := range rows {
			_, dup := inDB[r.Name]
			assert.False(t, dup, "row %q written twice", r.Name)
			inDB[r.Name] = r.N
		}
		for name, ok := range created {
			n, there := inDB[name]
			if !ok {
				assert.False(t, there, "Create of %q returned an error but its row is there", name)
				continue
			}
			if assert.True(t, there, "Create of %q returned nil but its row is missing", name) {
				assert.Equal(t, updates[name], n, "row %q: %d Updates returned nil", name, updates[name])
			}
		}
		assert.Len(t, inDB, len(rows))
		var total int64
		require.NoError(t, check.Table(counters).Select("SUM(n)").Scan(&total).Error)
		assert.Equal(t, 2*writes.Load(), total, "the hooks' counters disagree with the units that committed")
		t.Logf("%s: %d units committed, %d refused by the breaker, %d gave up after retries", d.Name, writes.Load(), refused.Load(), exhausted.Load())
		// The storm did what it is for: the breaker opened and refused
		// units, and units still committed around it.
		assert.Positive(t, refused.Load(), "the breaker never refused a unit: the storm did not reach it")
		assert.Positive(t, writes.Load(), "no unit committed")
	})
}
