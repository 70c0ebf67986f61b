package core

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRowsContextReleasedWhenRowsAreDone(t *testing.T) {
	c := newRowsContext(context.Background(), time.Hour)
	rows, closeRows := context.WithCancel(c) // what database/sql derives for the rows
	c.returnedRows()
	require.NoError(t, rows.Err())
	closeRows()
	c.mu.Lock()
	released, timer := c.released, c.timer
	c.mu.Unlock()
	assert.True(t, released)
	assert.Nil(t, timer, "the timer outlives the rows")
	assert.NoError(t, c.Err(), "a released context does not end: database/sql must not see it cancelled")
}

func TestRowsContextBoundsUnreadRows(t *testing.T) {
	c := newRowsContext(context.Background(), time.Millisecond)
	rows, closeRows := context.WithCancel(c)
	defer closeRows()
	c.returnedRows()
	select {
	case <-rows.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("rows still open after the attempt's deadline")
	}
	assert.ErrorIs(t, rows.Err(), context.DeadlineExceeded)
	assert.ErrorIs(t, c.Err(), context.DeadlineExceeded)
}

func TestRowsContextFollowsItsParent(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	c := newRowsContext(parent, time.Hour)
	rows, closeRows := context.WithCancel(c)
	defer closeRows()
	cancel()
	select {
	case <-rows.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the parent's end did not reach the rows")
	}
	assert.ErrorIs(t, c.Err(), context.Canceled)
	type key struct{}
	assert.Equal(t, "value", newRowsContext(context.WithValue(context.Background(), key{}, "value"), time.Hour).Value(key{}))

	early, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	dl, _ := early.Deadline()
	got, ok := newRowsContext(early, time.Hour).Deadline()
	assert.True(t, ok)
	assert.Equal(t, dl, got, "the parent's earlier deadline wins")
}
