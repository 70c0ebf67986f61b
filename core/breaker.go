package core

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ErrCircuitOpen reports an operation refused at once because the circuit
// breaker is open: the last operations all failed with retryable errors.
// The error still unwraps to the driver error that opened the breaker.
var ErrCircuitOpen = errors.New("core: circuit breaker open")

// BreakerSettings configures a circuit breaker. The zero value is a breaker
// that is off.
type BreakerSettings struct {
	// Failures is how many operations in a row must end with a retryable
	// error (after their retries) for the breaker to open. Zero means the
	// breaker is off.
	Failures int
	// OpenFor is how long the breaker stays open before it lets one probe
	// operation through. Zero means 30 s.
	OpenFor time.Duration
}

// Validate reports settings out of range, naming the value.
func (s BreakerSettings) Validate() error {
	switch {
	case s.Failures < 0:
		return fmt.Errorf("core: breaker failures=%d: expected 0 (off) or more", s.Failures)
	case s.OpenFor < 0:
		return fmt.Errorf("core: breaker open=%v: expected a time that is not negative", s.OpenFor)
	}
	return nil
}

const defaultOpenFor = 30 * time.Second

const (
	breakerClosed int32 = iota
	breakerOpen
	breakerHalfOpen // one probe is running
)

// Breaker is a circuit breaker, one per DB: after Failures operations in a
// row end with retryable errors it opens, and every operation fails at
// once with ErrCircuitOpen for OpenFor; then one probe runs, and its
// outcome closes or reopens the breaker. In the closed state the success
// path costs two atomic loads and takes no lock.
type Breaker struct {
	failures int32
	openFor  time.Duration
	clock    Clock

	state       atomic.Int32
	consecutive atomic.Int32

	mu       sync.Mutex // guards the fields below and state changes
	openedAt time.Time
	lastErr  error
}

// NewBreaker returns a closed breaker, or nil when s is off. A nil clock
// means SystemClock.
func NewBreaker(s BreakerSettings, clock Clock) *Breaker {
	if s.Failures <= 0 {
		return nil
	}
	if s.OpenFor <= 0 {
		s.OpenFor = defaultOpenFor
	}
	if clock == nil {
		clock = SystemClock{}
	}
	return &Breaker{failures: int32(min(s.Failures, 1<<30)), openFor: s.OpenFor, clock: clock}
}

// Open reports whether the breaker refuses operations now.
func (b *Breaker) Open() bool { return b != nil && b.state.Load() != breakerClosed }

// allow lets an operation start, or returns the error to fail it with.
func (b *Breaker) allow() error {
	if b == nil || b.state.Load() == breakerClosed {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state.Load() {
	case breakerClosed:
		return nil
	case breakerOpen:
		if b.clock.Now().Sub(b.openedAt) >= b.openFor {
			b.state.Store(breakerHalfOpen) // this operation is the probe
			return nil
		}
	}
	return &RetryError{Reason: ErrCircuitOpen, Err: b.lastErr,
		Detail: "open since " + b.openedAt.Format(time.RFC3339) + " for " + b.openFor.String()}
}

// succeeded records an operation that did not end with a retryable error.
func (b *Breaker) succeeded() {
	if b == nil {
		return
	}
	if b.state.Load() == breakerClosed {
		if b.consecutive.Load() != 0 {
			b.consecutive.Store(0)
		}
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.consecutive.Store(0)
	b.state.Store(breakerClosed)
	b.lastErr = nil
}

// failed records an operation that ended with a retryable error.
func (b *Breaker) failed(err error) {
	if b == nil {
		return
	}
	n := b.consecutive.Add(1)
	if b.state.Load() == breakerClosed && n < b.failures {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lastErr = err
	if b.state.Load() == breakerHalfOpen || n >= b.failures {
		b.state.Store(breakerOpen)
		b.openedAt = b.clock.Now()
	}
}
