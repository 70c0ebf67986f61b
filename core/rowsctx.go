package core

import (
	"context"
	"slices"
	"sync"
	"time"
)

// rowsContext is the attempt context of a statement whose rows are read
// after it returns (Op.Rows). Like context.WithTimeout's, it ends
// at the attempt's deadline, so reading the rows is bounded too; and when
// the Retrier's clock is a timerClock (a virtual clock), it also ends when
// the clock's time has moved by the queryTimeout. Unlike
// it, it is released as soon as the rows are closed or read to the end:
// its timer is stopped and nothing keeps it alive, instead of every
// successful read holding its context and timer until the deadline.
//
// It learns when the rows are done through its AfterFunc method: a
// context derived from it with context.WithCancel (database/sql derives
// one for the rows of every query, to close them when the context ends;
// drivers derive their own) registers there, and unregisters when that
// context is cancelled, which database/sql does when the rows are closed,
// by the caller or after the last row. When every context still
// registered as the statement returned has unregistered, nothing reads
// the rows any more: the timer is stopped. Its Done channel then stays
// open (closing it would race with database/sql's own close and could
// turn rows.Err into context.Canceled), and the context is garbage once
// the rows are.
type rowsContext struct {
	parent   context.Context
	deadline time.Time
	done     chan struct{}

	mu         sync.Mutex
	err        error
	timer      *time.Timer              // the queryTimeout on the real time
	clockTimer interface{ Stop() bool } // and on the clock's time, when it is a timerClock
	stopParent func() bool
	watchers   []*rowsWatcher
	returned   bool // the statement returned its rows: release when no watcher is left
	released   bool
}

type rowsWatcher struct{ f func() }

// newRowsContext returns the attempt context for d, as
// context.WithTimeout(parent, d) would, that also ends when clock is a
// timerClock and its time has moved d, whichever comes first.
//
// Its deadline stays on the real time: drivers set their sockets'
// deadlines from it (go-mssqldb dials with it), and a virtual clock's time,
// which stands still while an attempt runs, would make every dial after
// the first time out at once.
func newRowsContext(parent context.Context, d time.Duration, clock Clock) *rowsContext {
	c := &rowsContext{parent: parent, deadline: time.Now().Add(d), done: make(chan struct{})}
	own := true
	if pd, ok := parent.Deadline(); ok && !pd.After(c.deadline) {
		c.deadline, own = pd, false // the parent ends first, with its own error
	}
	if parent.Done() != nil {
		c.mu.Lock()
		c.stopParent = context.AfterFunc(parent, func() { c.cancel(parent.Err()) })
		c.mu.Unlock()
	}
	expire := func() { c.cancel(context.DeadlineExceeded) }
	var timer *time.Timer
	if own {
		timer = time.AfterFunc(d, expire)
	}
	var clockTimer interface{ Stop() bool }
	if tc, ok := clock.(timerClock); ok {
		clockTimer = tc.AfterFunc(d, expire)
	}
	if timer != nil || clockTimer != nil {
		c.mu.Lock()
		if c.err == nil {
			c.timer, c.clockTimer = timer, clockTimer
		} else {
			if timer != nil {
				timer.Stop()
			}
			if clockTimer != nil {
				clockTimer.Stop()
			}
		}
		c.mu.Unlock()
	}
	return c
}

// Deadline returns the attempt's deadline.
func (c *rowsContext) Deadline() (time.Time, bool) { return c.deadline, true }

// Done is closed when the attempt's time runs out or the parent ends.
func (c *rowsContext) Done() <-chan struct{} { return c.done }

// Err returns context.DeadlineExceeded, the parent's error, or
// context.Canceled once Done is closed; nil before.
func (c *rowsContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Value returns the parent's value.
func (c *rowsContext) Value(key any) any { return c.parent.Value(key) }

// AfterFunc arranges for f to run in its own goroutine when the context
// ends; context.WithCancel and context.AfterFunc use it. The stop function
// it returns unregisters f.
func (c *rowsContext) AfterFunc(f func()) func() bool {
	w := &rowsWatcher{f}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	c.watchers = append(c.watchers, w)
	c.mu.Unlock()
	return func() bool { return c.unwatch(w) }
}

// unwatch unregisters w, and releases the context when it was the last
// watcher of rows already returned.
func (c *rowsContext) unwatch(w *rowsWatcher) bool {
	c.mu.Lock()
	i := slices.Index(c.watchers, w)
	if i < 0 {
		c.mu.Unlock()
		return false
	}
	c.watchers = slices.Delete(c.watchers, i, i+1)
	if c.returned && len(c.watchers) == 0 && c.err == nil {
		c.releaseLocked()
	}
	c.mu.Unlock()
	return true
}

// returnedRows is called when the statement returned its rows. When no
// context derived from this one is alive, nothing says when the rows are
// done: the context then ends at its deadline.
func (c *rowsContext) returnedRows() {
	c.mu.Lock()
	c.returned = true
	c.mu.Unlock()
}

// releaseLocked stops the timer and the parent's watch; c.mu is held.
func (c *rowsContext) releaseLocked() {
	if c.released {
		return
	}
	c.released = true
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if c.clockTimer != nil {
		c.clockTimer.Stop()
		c.clockTimer = nil
	}
	if c.stopParent != nil {
		c.stopParent()
		c.stopParent = nil
	}
}

// cancel ends the context with err.
func (c *rowsContext) cancel(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	close(c.done)
	watchers := c.watchers
	c.watchers = nil
	c.releaseLocked()
	c.mu.Unlock()
	for _, w := range watchers {
		go w.f()
	}
}
