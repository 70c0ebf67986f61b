package config_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

// The layer's one context key carries a unit, a WithoutRetry mark, or
// both: WithoutRetry keeps the unit readable (its statements are still
// recorded in it, its run is still the attempt), and a unit given to a
// context replaces what it carried, so helpers ask NoRetry first.
func TestUnitAndWithoutRetry(t *testing.T) {
	bg := context.Background()
	assert.Nil(t, config.UnitOf(bg))
	assert.False(t, config.NoRetry(bg))
	assert.Zero(t, config.Attempt(bg))

	u := &config.Unit{}
	inUnit := config.UnitContext(bg, u)
	assert.Same(t, u, config.UnitOf(inUnit))
	assert.False(t, config.NoRetry(inUnit))
	assert.Zero(t, config.Attempt(inUnit), "a unit no helper started: an adapter's attempt of one statement")
	u.Start()
	u.Start()
	assert.Equal(t, 2, config.Attempt(inUnit), "the unit's second run")

	off := config.NoRetryContext(inUnit)
	assert.True(t, config.NoRetry(off))
	assert.Same(t, u, config.UnitOf(off), "the unit stays")
	assert.Equal(t, 2, config.Attempt(off))
	assert.Equal(t, off, config.NoRetryContext(off), "once is enough")

	alone := config.NoRetryContext(bg)
	assert.True(t, config.NoRetry(alone))
	assert.Nil(t, config.UnitOf(alone))
	assert.False(t, config.NoRetry(config.UnitContext(alone, u)), "a unit replaces the mark")

	var none *config.Unit
	assert.Empty(t, none.FailedQuery(), "no unit (a helper under WithoutRetry) records nothing")
}

// A unit reads the statement that ended its transaction in the record the
// driver layer keeps of it (core.TxRecord) while it runs, and keeps it
// once it ended, when the connection's record goes on to its next
// transaction; a ROLLBACK that fails after a failure does not replace it,
// in the record as in the unit.
func TestUnitReadsItsTransactionsRecord(t *testing.T) {
	deadlock := errors.New("deadlock")
	var rec core.TxRecord
	rec.Reset(0)
	u := &config.Unit{}
	u.Began(nil, &rec)
	assert.Empty(t, u.FailedQuery())

	rec.Fail("UPDATE t SET v = 1", deadlock)
	rec.Fail("ROLLBACK TO SAVEPOINT sp1", errors.New("no transaction"))
	q, err := u.Failed()
	assert.Equal(t, "UPDATE t SET v = 1", q)
	assert.Same(t, deadlock, err)

	u.Ended(&rec)
	rec.Reset(0) // the connection's next transaction
	rec.Fail("DELETE FROM t", errors.New("another transaction's"))
	q, err = u.Failed()
	assert.Equal(t, "UPDATE t SET v = 1", q, "kept when the transaction ended")
	assert.Same(t, deadlock, err)

	u.Start()
	assert.Empty(t, u.FailedQuery(), "a new run forgets it")
	assert.Equal(t, 1, config.Attempt(config.UnitContext(context.Background(), u)))
}
