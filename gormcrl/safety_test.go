package gormcrl_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
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
