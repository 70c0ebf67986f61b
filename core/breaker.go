package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crl-go/crl/internal/tables/limits"
)

// errPanicked is the failure the breaker records for an operation that
// panicked (or called runtime.Goexit) before it reported its outcome.
var errPanicked = errors.New("core: the operation panicked")

// BreakerSettings configures a circuit breaker. The zero value is a breaker
// that is off. NewBreaker and Validate reject a value out of range with an
// error naming it: nothing is silently changed or ignored.
type BreakerSettings struct {
	// Failures is how many operations in a row must end with a retryable
	// error (after their retries) for the breaker to open: 1 to 2³⁰−1.
	// Zero means the breaker is off (and then OpenFor must be zero too).
	Failures int
	// OpenFor is how long the breaker stays open before it lets one probe
	// operation through, and how long a probe may take to report before
	// another one is let through: up to 24 h (longer would keep a handle
	// refusing every operation for days after one bad minute of its
	// database: a misconfiguration, not a policy). Zero means 30 s.
	OpenFor time.Duration
}

// Validate reports settings out of range, naming the value and the range
// expected.
func (s BreakerSettings) Validate() error {
	switch {
	case s.Failures < 0 || s.Failures > limits.MaxBreakerFailures:
		return fmt.Errorf("core: breaker failures=%d: expected 0 (off) or 1 to %d", s.Failures, limits.MaxBreakerFailures)
	case s.OpenFor < 0 || s.OpenFor > limits.MaxBreakerOpenFor:
		return fmt.Errorf("core: breaker open=%v: expected 0 (the default, %v) or a time up to %v", s.OpenFor, defaultOpenFor, limits.MaxBreakerOpenFor)
	case s.Failures == 0 && s.OpenFor != 0:
		return fmt.Errorf("core: breaker open=%v with failures=0 (off): expected failures of at least 1 to turn the breaker on, or open=0", s.OpenFor)
	}
	return nil
}

const defaultOpenFor = 30 * time.Second

// The breaker's state word packs, so that one atomic load tells all:
// bits 0-1 the state, bits 2-31 the failures in a row (closed state), bits
// 32-63 the generation, which changes with every change of state. A
// result reported under an earlier generation moves nothing.
const (
	breakerClosed   uint64 = 0
	breakerOpen     uint64 = 1
	breakerHalfOpen uint64 = 2 // one probe is running

	stateMask  uint64 = 3
	countShift        = 2
	countOne   uint64 = 1 << countShift
	countMask  uint64 = (1<<30 - 1) << countShift
	genShift          = 32
	genOne     uint64 = 1 << genShift
)

// limits.MaxBreakerFailures must fit the count bits of the state word.
const _ = uint64(countMask>>countShift - limits.MaxBreakerFailures)

func stateOf(w uint64) uint64         { return w & stateMask }
func failuresOf(w uint64) uint64      { return (w & countMask) >> countShift }
func sameGeneration(a, b uint64) bool { return a>>genShift == b>>genShift }

// next is the word of a new generation in state s, with no failures.
func next(w, s uint64) uint64 { return (w>>genShift+1)<<genShift | s }

// Breaker is a two-step circuit breaker, one per DB: an operation asks it
// before it runs (allow) and tells it the outcome after (the permit it got).
// After Failures operations in a row end with retryable errors it opens,
// and every operation fails at once with ErrCircuitOpen, without running,
// for OpenFor; then one probe runs, and its outcome closes or reopens the
// breaker. A probe that panics counts as a failure; a probe whose context
// ended before the database answered decides nothing, and the next
// operation is the probe; a probe that never reports (its goroutine
// blocked, a panic no one saw) is replaced by another after OpenFor.
// Outcomes reported under an earlier state (an operation let through
// before the breaker opened) never move the current one. In the closed
// state asking and reporting a success cost one atomic load each and take
// no lock.
type Breaker struct {
	failures uint64
	openFor  time.Duration
	clock    Clock

	word atomic.Uint64

	mu      sync.Mutex // held for every change of state, with the fields below
	since   time.Time  // when the breaker opened, or when the probe started
	lastErr error      // the error that opened it

	// Counted under mu, read without it (Opens, Probes): a closed
	// breaker's success path never touches them.
	opens, probes atomic.Uint64
}

// NewBreaker returns a closed breaker, or nil when s is off (Failures 0).
// Settings out of range (see Validate) are an error, never a default. A
// nil clock means systemClock.
func NewBreaker(s BreakerSettings, clock Clock) (*Breaker, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.Failures == 0 {
		return nil, nil
	}
	if s.OpenFor == 0 {
		s.OpenFor = defaultOpenFor
	}
	if clock == nil {
		clock = systemClock{}
	}
	return &Breaker{failures: uint64(s.Failures), openFor: s.OpenFor, clock: clock}, nil
}

// Open reports whether the breaker refuses operations now (open, or
// half-open with its probe running).
func (b *Breaker) Open() bool { return b != nil && stateOf(b.word.Load()) != breakerClosed }

// breakerStates are the names State returns, by state.
var breakerStates = [...]string{breakerClosed: "closed", breakerOpen: "open", breakerHalfOpen: "half_open"}

// States returns the names State can return: closed, open, half_open (a
// new slice each call), for a metric that creates one series per state.
func (b *Breaker) States() []string { return append([]string(nil), breakerStates[:]...) }

// State returns the breaker's state now: closed (operations run), open
// (they fail at once with ErrCircuitOpen) or half_open (one probe runs,
// the others fail at once). A nil breaker (off) is closed. One atomic
// load, no lock: a metrics hook reads it on collection.
func (b *Breaker) State() string {
	if b == nil {
		return breakerStates[breakerClosed]
	}
	if st := stateOf(b.word.Load()); st < uint64(len(breakerStates)) {
		return breakerStates[st]
	}
	return breakerStates[breakerClosed] // no word holds the fourth value

}

// Opens returns how many times the breaker has opened since it was made:
// a closed breaker reaching Failures in a row, or a probe that failed.
// A probe whose caller's context ended decides nothing and is not
// counted. 0 for a nil breaker.
func (b *Breaker) Opens() uint64 {
	if b == nil {
		return 0
	}
	return b.opens.Load()
}

// Probes returns how many probe operations the breaker has let through
// in the half-open state since it was made (one each time OpenFor has
// passed while open, or while a probe did not report). 0 for a nil
// breaker.
func (b *Breaker) Probes() uint64 {
	if b == nil {
		return 0
	}
	return b.probes.Load()
}

// permit is the breaker's leave for one operation: the state word it was
// given under. Its zero value (no breaker) reports nowhere.
type permit struct {
	b    *Breaker
	word uint64
}

// allow asks the breaker whether an operation may start. It returns the
// permit to report the outcome to, or the error to fail the operation
// with (nothing of it may run).
func (b *Breaker) allow() (permit, error) {
	if b == nil {
		return permit{}, nil
	}
	if w := b.word.Load(); stateOf(w) == breakerClosed {
		return permit{b, w}, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	w := b.word.Load()
	now := b.clock.Now()
	switch stateOf(w) {
	case breakerClosed:
		return permit{b, w}, nil
	case breakerOpen, breakerHalfOpen:
		// Open: after OpenFor this operation is the probe. Half-open: the
		// probe has not reported for OpenFor; this one replaces it.
		if now.Sub(b.since) >= b.openFor {
			w = next(w, breakerHalfOpen)
			b.word.Store(w)
			b.since = now
			b.probes.Add(1)
			return permit{b, w}, nil
		}
	}
	return permit{}, &RetryError{Reason: ErrCircuitOpen, Err: b.lastErr,
		Detail: "since " + b.since.Format(time.RFC3339) + ", next probe after " + b.openFor.String()}
}

// admission is an Op's leave from the circuit breaker, taken by Admit
// before anything of the operation ran: the breaker's two steps (allow
// before, the permit's report after) split across two calls.
type admission struct {
	pm      permit
	started time.Time // when the operation started, for Elapsed
}

// Admit is the first of the circuit breaker's two steps for an operation
// whose first attempt runs before Run can (GORM runs a Create's first
// attempt through its own callbacks): it starts op (counted, and timed
// when the observer reads the time) and asks the breaker whether it may
// run. When the breaker is open the error matches ErrCircuitOpen (and
// unwraps to the error that opened it), a GaveUp event is emitted, and
// nothing of the operation may run. Otherwise op is admitted: then
// exactly one of two things ends it — Run, which does not ask the breaker
// again and reports the outcome of the attempts to it, or Release, which
// gives the leave back unused.
func (r *Retrier) Admit(ctx context.Context, op *Op) error {
	if op == nil {
		return errNoOp
	}
	if r.refresh != nil {
		r.refresh()
	}
	o := operation{ctx: ctx, kind: op.Kind, query: op.Query}
	r.begin(&o)
	pm, err := r.admit(&o)
	if err != nil {
		return err
	}
	op.admission = &admission{pm: pm, started: o.started}
	return nil
}

// Release gives back the leave of an admitted Op that will not be Run: it
// tells the breaker nothing about the database, and a probe's place goes
// to the next operation. An Op that Admit did not admit has nothing to
// give back.
func (op *Op) Release() {
	if op != nil && op.admission != nil {
		op.admission.pm.undecided()
	}
}

// admit asks the circuit breaker whether o may start, and emits GaveUp
// when it may not.
func (r *Retrier) admit(o *operation) (permit, error) {
	pm, err := r.breaker.allow()
	if err != nil && r.observer != nil {
		r.observer.GaveUp(GaveUp{Context: o.ctx, Op: r.opID(o), Kind: o.kind, Query: o.query, Reason: ErrCircuitOpen, Err: err})
	}
	return pm, err
}

// succeeded reports an operation that did not end with a retryable error:
// the database answered.
func (p permit) succeeded() { p.report(nil) }

// failed reports an operation that ended with a retryable error (or
// panicked).
func (p permit) failed(err error) { p.report(err) }

// ended tells the breaker how the loop of an operation under ctx ended:
// settled false is a panic (or runtime.Goexit), a failure; failure is a
// retryable failure the loop gave up on, which err (the loop's error)
// holds; an error after the caller's context ended says nothing of the
// database; anything else is an answer of the database.
func (p permit) ended(ctx context.Context, settled, failure bool, err error) {
	switch {
	case !settled:
		p.failed(errPanicked)
	case failure:
		if re, ok := err.(*RetryError); ok {
			err = re.Err // the driver's error opens the breaker, not the loop's
		}
		p.failed(err)
	case err != nil && ctx.Err() != nil:
		// The context ended: the error may be its own, not the database's.
		p.undecided()
	default:
		p.succeeded()
	}
}

// report moves the breaker on an operation's outcome, failure nil for a
// success: closed counts failures in a row and opens at the threshold; a
// half-open probe closes it on success and opens it again on failure.
func (p permit) report(failure error) {
	for {
		w, ok := p.load()
		if !ok {
			return
		}
		switch st := stateOf(w); {
		case st == breakerClosed && failure == nil:
			if failuresOf(w) == 0 || p.b.word.CompareAndSwap(w, w&^countMask) {
				return
			}
		case st == breakerClosed && failuresOf(w)+1 < p.b.failures:
			if p.b.word.CompareAndSwap(w, w+countOne) {
				return
			}
		case st == breakerHalfOpen && failure == nil:
			p.move(breakerClosed, func(b *Breaker) { b.lastErr = nil })
			return
		case st == breakerClosed || st == breakerHalfOpen:
			p.move(breakerOpen, func(b *Breaker) {
				b.since, b.lastErr = b.clock.Now(), failure
				b.opens.Add(1)
			})
			return
		default:
			return
		}
	}
}

// undecided reports an operation whose context ended before the database
// answered: it tells nothing about the database. A probe so ended leaves
// the breaker open with the next operation as the probe; in the closed
// state nothing changes.
func (p permit) undecided() {
	b := p.b
	if b == nil || stateOf(p.word) != breakerHalfOpen {
		return
	}
	p.move(breakerOpen, func(b *Breaker) { b.since = b.clock.Now().Add(-b.openFor) })
}

// load returns the breaker's word, and false when there is no breaker or
// its state changed since p was given: a result from an earlier
// generation is dropped.
func (p permit) load() (uint64, bool) {
	if p.b == nil {
		return 0, false
	}
	w := p.b.word.Load()
	return w, sameGeneration(w, p.word)
}

// move takes the breaker to state to, and runs set under its lock, unless
// its state changed since p was given (another generation).
func (p permit) move(to uint64, set func(b *Breaker)) {
	b := p.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if w := b.word.Load(); sameGeneration(w, p.word) {
		b.word.Store(next(w, to))
		set(b)
	}
}
