package core_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
)

// rowsRetrier returns a retrier whose queryTimeout is qt, on clock.
func rowsRetrier(t *testing.T, qt time.Duration, clock core.Clock) *core.Retrier {
	t.Helper()
	r, err := core.NewRetrier(core.Policy{QueryTimeout: qt}, core.Options{Clock: clock})
	require.NoError(t, err)
	return r
}

// queryRows runs a statement whose rows are read later (Op.Rows) and returns the context its
// rows are read under: the attempt's, and the one database/sql derives
// from it for the rows (closed by closeRows, as rows.Close does).
func queryRows(t *testing.T, ctx context.Context, r *core.Retrier) (attempt, rows context.Context, closeRows func()) {
	t.Helper()
	attempt, err := runValue(ctx, r, core.Op{Query: "select n from t", Rows: true}, func(ctx context.Context) (context.Context, error) { return ctx, nil })
	require.NoError(t, err)
	rows, closeRows = context.WithCancel(attempt)
	t.Cleanup(closeRows)
	return attempt, rows, closeRows
}

// ended waits (at most 5 s of real time, a guard) for ctx to end: the
// contexts derived from the attempt's learn of its end on a goroutine.
func ended(t *testing.T, ctx context.Context) bool {
	t.Helper()
	select {
	case <-ctx.Done():
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

// The queryTimeout of rows read after the statement returned is on the
// Retrier's clock too: the rows end when the virtual time reaches it, not
// before. (Their deadline, which drivers give their sockets, stays on the
// real time.)
func TestRowsQueryTimeoutOnTheRetriersClock(t *testing.T) {
	clock := coretest.NewClock(time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)) // far from the real time
	before := time.Now()
	attempt, rows, _ := queryRows(t, context.Background(), rowsRetrier(t, time.Minute, clock))

	dl, ok := rows.Deadline()
	assert.True(t, ok, "the rows have a deadline")
	assert.WithinRange(t, dl, before.Add(time.Minute), time.Now().Add(time.Minute), "the deadline the driver sees is on the real time")

	clock.Advance(time.Minute - time.Nanosecond)
	require.NoError(t, attempt.Err(), "ended before the virtual time reached the queryTimeout")
	require.NoError(t, rows.Err())

	clock.Advance(time.Nanosecond)
	assert.ErrorIs(t, attempt.Err(), context.DeadlineExceeded, "the virtual time reached the queryTimeout")
	require.True(t, ended(t, rows), "the rows are still open after the queryTimeout")
	assert.ErrorIs(t, rows.Err(), context.DeadlineExceeded)
}

// Rows closed (or read to the end) release the attempt's context: its
// timer is stopped, and it does not end (database/sql must not see it
// cancelled), even when the time passes its deadline later.
func TestRowsContextReleasedWhenRowsAreDone(t *testing.T) {
	clock := coretest.NewClock(time.Time{})
	attempt, rows, closeRows := queryRows(t, context.Background(), rowsRetrier(t, time.Hour, clock))
	assert.Equal(t, 1, clock.Timers(), "the queryTimeout's timer")
	require.NoError(t, rows.Err())
	closeRows()
	assert.Equal(t, 0, clock.Timers(), "the timer outlives the rows")
	clock.Advance(2 * time.Hour)
	assert.NoError(t, attempt.Err(), "a released context does not end")
}

// A failed attempt stops its timer at once.
func TestRowsContextOfAFailedAttemptIsReleased(t *testing.T) {
	clock := coretest.NewClock(time.Time{})
	r := rowsRetrier(t, time.Hour, clock)
	_, err := runValue(context.Background(), r, core.Op{Query: "select n from t", Rows: true}, func(context.Context) (int, error) { return 0, serverError{2627} })
	assert.Error(t, err)
	assert.Equal(t, 0, clock.Timers())
}

// An attempt that really runs for the queryTimeout ends on the real time
// too, whatever the clock: a query that hangs is bounded while a virtual
// clock stands still.
func TestRowsQueryTimeoutOnTheRealTime(t *testing.T) {
	for name, clock := range map[string]core.Clock{
		"virtual clock":        coretest.NewClock(time.Time{}),
		"clock without timers": struct{ core.Clock }{coretest.NewClock(time.Time{})}, // Now and Sleep only
		"system clock (nil)":   nil,
	} {
		_, rows, _ := queryRows(t, context.Background(), rowsRetrier(t, time.Millisecond, clock))
		require.True(t, ended(t, rows), "%s: rows still open after the attempt's deadline", name)
		assert.ErrorIs(t, rows.Err(), context.DeadlineExceeded, name)
	}
}

func TestRowsContextFollowsItsParent(t *testing.T) {
	clock := coretest.NewClock(time.Time{})
	r := rowsRetrier(t, time.Hour, clock)
	parent, cancel := context.WithCancel(context.Background())
	attempt, rows, _ := queryRows(t, parent, r)
	cancel()
	require.True(t, ended(t, rows), "the parent's end did not reach the rows")
	assert.ErrorIs(t, attempt.Err(), context.Canceled)

	type key struct{}
	attempt, _, _ = queryRows(t, context.WithValue(context.Background(), key{}, "value"), r)
	assert.Equal(t, "value", attempt.Value(key{}))

	early, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	attempt, _, _ = queryRows(t, early, r)
	dl, _ := early.Deadline()
	got, ok := attempt.Deadline()
	assert.True(t, ok)
	assert.Equal(t, dl, got, "the parent's earlier deadline wins")
	clock.Advance(time.Hour)
	assert.ErrorIs(t, attempt.Err(), context.DeadlineExceeded, "the queryTimeout on the clock's time still ends it")
}
