package gormcrl_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/gormcrl"
	"github.com/crl-go/crl/mssqltest"
)

// With the breaker open, a Create must not run at all: before, its first
// attempt ran through GORM's chain and committed, and only then was the
// breaker asked, which refused: the caller saw an error for a row that was
// written. The breaker is now asked before the first attempt, and its
// verdict is the outcome of the attempt that ran.
func TestCreateRefusedByOpenBreakerWritesNothing(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, clock := open(t, s, nil, config.WithCircuitBreaker(core.BreakerSettings{Failures: 1, OpenFor: time.Minute}))
	s.Handle(insertOrder, mssqltest.Error(1205), mssqltest.Error(1205), mssqltest.Error(1205), mssqltest.Error(1205), idRow(9))

	// One Create that fails after its retries opens the breaker.
	err := db.Create(&Order{Name: "a"}).Error
	require.ErrorIs(t, err, core.ErrRetriesExhausted)
	require.Equal(t, 4, s.Count(insertOrder))

	// Refused: nothing runs, nothing is committed, and the error says that
	// the 1205 it carries is the one that opened the breaker.
	o := Order{Name: "b"}
	err = db.Create(&o).Error
	require.ErrorIs(t, err, core.ErrCircuitOpen)
	assert.Contains(t, err.Error(), "nothing ran")
	assert.Equal(t, 4, s.Count(insertOrder), "a refused Create ran its INSERT")
	assert.Empty(t, s.Committed(), "a refused Create committed")
	assert.Zero(t, o.ID)
	assert.ErrorIs(t, db.Model(&Order{ID: 9}).Update("name", "x").Error, core.ErrCircuitOpen)
	assert.ErrorIs(t, db.Delete(&Order{ID: 9}).Error, core.ErrCircuitOpen)
	assert.Zero(t, s.Count(updateOrder)+s.Count(deleteOrder))

	// After OpenFor the next Create is the probe: it runs once, commits,
	// and its success closes the breaker.
	clock.Advance(time.Minute)
	require.NoError(t, db.Create(&o).Error)
	assert.Equal(t, int64(9), o.ID)
	assert.Len(t, s.Committed(), 1)
	require.NoError(t, db.Create(&Order{Name: "c"}).Error, "the breaker stayed open after a successful probe")
}

// With a queryTimeout, GORM reads (through the plugin's statement pool)
// keep nothing alive once their rows are closed: the same bytes per read
// stay on the heap with and without a queryTimeout.
func TestGormReadsRetainNothingUntilQueryTimeout(t *testing.T) {
	const reads = 3000
	retained := func(opts ...gormcrl.Option) float64 {
		s := mssqltest.NewServer(t)
		s.Handle(selectAll, mssqltest.Rows([]string{"id", "name"}, []any{int64(1), "a"}, []any{int64(2), "b"}))
		s.Handle(selectFirst, orderRow(7, "pen"))
		db, _ := open(t, s, nil, opts...)
		read := func(i int) {
			if i%2 == 0 {
				var orders []Order
				require.NoError(t, db.Find(&orders).Error)
				return
			}
			var o Order
			require.NoError(t, db.First(&o, 7).Error)
		}
		for i := 0; i < 100; i++ {
			read(i)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := 0; i < reads; i++ {
			read(i)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / reads
	}
	without := retained()
	with := retained(config.WithQueryTimeout(time.Hour))
	t.Logf("retained per read: %.0f B without queryTimeout, %.0f B with", without, with)
	assert.InDelta(t, without, with, 150, "bytes retained per read")
}

// PanickyOrder's BeforeCreate panics while panicking is set.
type PanickyOrder struct {
	ID        int64
	Name      string
	panicking bool
}

func (o *PanickyOrder) BeforeCreate(*gorm.DB) error {
	if o.panicking {
		panic("hook")
	}
	return nil
}

// A hook that panics while its Create is the breaker's probe goes through
// GORM, where crl cannot see it: the probe never reports. The breaker is
// not wedged: after OpenFor another probe runs.
func TestBreakerNotWedgedByAPanickingHook(t *testing.T) {
	const insert = `INSERT INTO "panicky_orders" ("name") OUTPUT INSERTED."id" VALUES (@p1);`
	s := mssqltest.NewServer(t)
	db, clock := open(t, s, nil, config.WithCircuitBreaker(core.BreakerSettings{Failures: 1, OpenFor: time.Minute}))
	s.Handle(insert, mssqltest.Error(1205), mssqltest.Error(1205), mssqltest.Error(1205), mssqltest.Error(1205), idRow(5))
	require.ErrorIs(t, db.Create(&PanickyOrder{Name: "a"}).Error, core.ErrRetriesExhausted)

	clock.Advance(time.Minute)
	assert.Panics(t, func() { db.Create(&PanickyOrder{Name: "b", panicking: true}) })
	assert.ErrorIs(t, db.Create(&PanickyOrder{Name: "c"}).Error, core.ErrCircuitOpen, "one probe at a time")
	clock.Advance(time.Minute)
	o := PanickyOrder{Name: "d"}
	require.NoError(t, db.Create(&o).Error, "the breaker is wedged")
	assert.Equal(t, int64(5), o.ID)
	require.NoError(t, db.Create(&PanickyOrder{Name: "e"}).Error)
}
