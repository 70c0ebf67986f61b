package gormcrl_test

import (
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

// With the circuit breaker open, gormcrl.Transaction does not begin (its
// closure never runs), and statements outside any unit (Raw, Exec, First)
// are refused before anything reaches the server: the breaker is asked
// before the first attempt on every path, not only for Create, Update and
// Delete (issue 9, item 1).
func TestOpenBreakerRefusesTransactionsAndStatements(t *testing.T) {
	const sel = "SELECT n FROM t"
	s := mssqltest.NewServer(t)
	db, clock := open(t, s, nil, config.WithCircuitBreaker(core.BreakerSettings{Failures: 1, OpenFor: time.Minute}))
	s.Handle(audit, mssqltest.Error(1205), mssqltest.Error(1205), mssqltest.Error(1205), mssqltest.Error(1205), mssqltest.Affected(1))
	s.Handle(sel, mssqltest.Rows([]string{"n"}, []any{int64(1)}))

	// A statement that fails after its retries opens the breaker.
	require.ErrorIs(t, db.Exec(audit).Error, core.ErrRetriesExhausted)
	require.Equal(t, 4, s.Count(audit))

	runs := 0
	err := gormcrl.Transaction(db, func(tx *gorm.DB) error {
		runs++
		return tx.Exec(audit).Error
	})
	require.ErrorIs(t, err, core.ErrCircuitOpen)
	assert.Zero(t, runs, "the closure ran under an open breaker")

	assert.ErrorIs(t, db.Exec(audit).Error, core.ErrCircuitOpen, "Exec")
	var ns []int64
	assert.ErrorIs(t, db.Raw(sel).Scan(&ns).Error, core.ErrCircuitOpen, "Raw(...).Scan")
	var o Order
	assert.ErrorIs(t, db.First(&o, 7).Error, core.ErrCircuitOpen, "First")
	var n int64
	row := db.Raw(sel).Row()
	require.NotNil(t, row, "Raw(...).Row()")
	assert.ErrorIs(t, row.Scan(&n), core.ErrCircuitOpen, "Raw(...).Row().Scan")

	assert.Equal(t, 4, s.Count(audit), "a refused statement reached the server")
	assert.Zero(t, s.Count(sel)+s.Count(selectFirst), "a refused query reached the server")
	assert.Empty(t, s.Committed(), "something committed under an open breaker")

	// After OpenFor the next operation is the probe; its success closes
	// the breaker.
	clock.Advance(time.Minute)
	require.NoError(t, gormcrl.Transaction(db, func(tx *gorm.DB) error {
		runs++
		return tx.Exec(audit).Error
	}), "the probe")
	assert.Equal(t, 1, runs)
	assert.Len(t, s.Committed(), 1)
	require.NoError(t, db.Raw(sel).Scan(&ns).Error, "the breaker is closed again")
	assert.Equal(t, []int64{1}, ns)
}
