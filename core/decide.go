package core

import (
	"errors"
	"strings"
	"time"
)

// The decision of the loops, kept apart from their execution as
// failsafe-go's retry executor keeps them: after a failed attempt, a pure
// function of the attempt's result and the policy says whether to retry,
// after how long, or with which reason to give up; the loops (retrier.go,
// connect.go) run attempts, charge the budget, emit events and wait.

// decision is what a loop does after an attempt failed: retry after Wait,
// or give up with Reason.
type decision struct {
	// Reason is nil when the attempt is retried; otherwise the sentinel the
	// loop gives up with: ErrNotRetryable (no rule, retryCount 0, the
	// query filter does not match, or a loop below gave up on the error),
	// ErrRetriesExhausted, ErrBatchNotRetried, ErrInvalidRetryInterval,
	// or ErrCommitUnknown.
	Reason error
	// Wait is the rule's wait before the next attempt, before jitter.
	Wait time.Duration
	// Detail says more about Reason ("" when there is nothing to add).
	Detail string

	tok       token
	facts     errorFacts // the failure, as the budget charges it
	charge    charge     // what the budget is told when the loop gives up
	dbFailure bool       // the give-up is a failure of the database for the circuit breaker: a retryable failure not retried
}

// charge is what a give-up tells the retry budget.
type charge uint8

const (
	chargeNone charge = iota // nothing: no rule retries the error, or it costs nothing; only a success earns
	chargeFail               // a retryable failure that is not retried
)

// Decide is the statement loop's decision after attempt (1-based) of
// query failed with err, under p: another attempt after wait (the rule's,
// before jitter) when giveUp is nil; otherwise giveUp is the sentinel the
// loop gives up with: ErrNotRetryable (no rule, retryCount 0, the query
// filter does not match, or err is the give-up of a loop that already
// retried it), ErrRetriesExhausted, ErrBatchNotRetried,
// ErrInvalidRetryInterval or ErrCommitUnknown. It is a pure function: it
// reads no clock, budget or breaker (the loop asks those before it waits,
// see docs/semantics.md) and does not allocate when it retries.
func (p *Policy) Decide(query string, attempt int, err error) (wait time.Duration, giveUp error) {
	d := p.decide(KindStatement, query, attempt, err, false)
	return d.Wait, d.Reason
}

// WantsFirstRow reports whether a query's first attempt must end only
// after its first row (or its end) was read, for the loop to decide on
// an error met there: when a rule of the current policy could retry an
// error of query (StatementRules: one with retries whose filter matches
// it), or when the observer is told how operations end (an error before
// the first row ends the operation). When it is false, an error before
// the first row is met while the caller reads the rows, as any later
// one (Unretried), and nothing is lost: no rule would have retried it.
// It reads one atomic pointer and does not allocate.
func (r *Retrier) WantsFirstRow(query string) bool {
	return r.timed || r.policy.Load().Statement.mayRetry(query)
}

// WantsFirstRowMemo is WantsFirstRow(query), where memo remembers its
// answer for query: memo is query's own, kept by the caller (a
// connection's last texts, a prepared statement) and zeroed when the
// text changes (zero holds no answer); core writes there the answer and
// the generation of the policy that gave it. While that policy is the
// current one the answer costs an atomic load and a comparison instead
// of reading the query's first keyword; a policy swapped in since
// (SetPolicy, a reload of the properties file) is asked again
// (firstRowMemo). It does not allocate.
func (r *Retrier) WantsFirstRowMemo(query string, memo *uint64) bool {
	if r.timed || r.policy.Load().Statement.unfiltered {
		return true // no filter to read: nothing to remember
	}
	return r.firstRowMemo(query, memo)
}

// firstRowMemo is WantsFirstRowMemo for rules whose filters name
// statements: memo's answer while its policy is the current one, else
// WantsFirstRow's, written in memo (its low bit) beside the generation of
// the policy (Retrier.gen, even), read before the policy: a policy
// swapped in meanwhile answers under the generation before its own,
// which the next call finds old and asks again, never the other way
// round.
func (r *Retrier) firstRowMemo(query string, memo *uint64) bool {
	m := r.gen.Load()
	if *memo&^1 == m {
		return *memo&1 != 0
	}
	wants := r.WantsFirstRow(query)
	if wants {
		m |= 1
	}
	*memo = m
	return wants
}

// decide is Decide for any kind of loop but the connection loop.
// attemptTimedOut says that the attempt's own time limit (queryTimeout)
// ran out while the caller's context was alive.
func (p *Policy) decide(kind Kind, query string, attempt int, err error, attemptTimedOut bool) decision {
	if s, ok := err.(*replayStop); ok {
		// A replay that must stop whatever the rules say (replay.go). An
		// answer that came back different is the database answering
		// correctly (another session changed what the transaction read),
		// not a failure of it: a contention storm of divergences must not
		// open the breaker and refuse every statement of the pool.
		return decision{Reason: s.reason, Detail: s.code, dbFailure: s.code != stopAnswer && s.err != errAnswerDiffers}
	}
	if kind == KindTransaction && errors.Is(err, ErrCommitUnknown) {
		// Never retried, never silent: the caller must find out whether
		// the transaction was applied.
		return decision{Reason: ErrCommitUnknown, dbFailure: true}
	}
	if retriedBelow(err) {
		// A loop under this one already gave up on err after its own
		// retries: crl's driver layer under an adapter's statement loop,
		// or a unit (RunInTx, Retry, ...) run inside this unit's function
		// with a context that carries no unit. Retrying again would
		// multiply the rule's count.
		return decision{Reason: ErrNotRetryable, dbFailure: true}
	}
	facts := factsOf(err, attemptTimedOut)
	rule := p.Statement.lookup(&facts)
	if rule == nil || rule.count == 0 || !rule.matches(query) {
		return decision{Reason: ErrNotRetryable}
	}
	if kind == KindStatement {
		if why := batchRefusal(query, rule); why != "" {
			return decision{Reason: ErrBatchNotRetried, Detail: why, dbFailure: true}
		}
		if why := brokenWrite(query, &facts); why != "" {
			return decision{Reason: ErrNotRetryable, Detail: why, dbFailure: true}
		}
	}
	retry := attempt - 1
	if retry >= rule.count {
		return decision{Reason: ErrRetriesExhausted, facts: facts, charge: chargeFail, dbFailure: true}
	}
	wait := rule.wait(retry)
	if p.RefusesWait(wait) {
		return decision{Reason: ErrInvalidRetryInterval, dbFailure: true,
			Detail: "wait " + wait.String() + " > queryTimeout " + max(p.QueryTimeout, 0).String()}
	}
	return decision{Wait: wait, tok: rule.tok, facts: facts}
}

// RefusesWait reports whether p's queryTimeout refuses a statement retry
// that waits wait (ErrInvalidRetryInterval): a set queryTimeout refuses a
// longer wait, and JDBCQueryTimeoutZero (JDBC's queryTimeout=0) every
// wait longer than zero.
func (p *Policy) RefusesWait(wait time.Duration) bool {
	return p.QueryTimeout != 0 && wait > max(p.QueryTimeout, 0)
}

// connectState is what the connection loop's decision reads of its run.
type connectState struct {
	retry    int           // retries of this loop so far
	elapsed  time.Duration // since Connect started
	timedOut bool          // the attempt ran out of its time (the loginTimeout)
}

// decideConnection is the decision of JDBC's connection loop (connect())
// after its login loop gave up with err.
func (p *Policy) decideConnection(s connectState, err error) decision {
	facts := factsOf(err, false)
	count, interval, login := p.connectRetryCount(), p.connectRetryInterval(), p.loginTimeout()
	switch {
	case s.elapsed >= login, facts.timeout && s.elapsed+interval >= login: // the last attempt ran out of time
		return decision{Reason: ErrLoginTimeout, Detail: "loginTimeout " + login.String() + " ran out"}
	case !p.Connection.retryable(facts, isServerError(err)):
		return decision{Reason: ErrNotRetryable}
	case s.retry >= count:
		return decision{Reason: ErrRetriesExhausted, facts: facts, charge: chargeFail}
	case s.elapsed+interval >= login:
		return decision{Reason: ErrLoginTimeout,
			Detail: "elapsed " + s.elapsed.String() + " + connectRetryInterval " + interval.String() + " ≥ loginTimeout " + login.String()}
	}
	return decision{Wait: connectWait(s.retry, interval), facts: facts}
}

// decideLogin is the decision of JDBC's login loop (login()) after an
// attempt failed with err, remaining before the loginTimeout, the first
// attempt having taken firstTry: retry (true) or hand err to the
// connection loop.
func (p *Policy) decideLogin(s connectState, err error, remaining, firstTry time.Duration) (decision, bool) {
	interval := p.connectRetryInterval()
	if remaining <= 0 || s.timedOut ||
		remaining < interval+2*firstTry || // not enough time for another try
		s.retry >= p.connectRetryCount() {
		return decision{}, false
	}
	facts := factsOf(err, false)
	if !p.loginRetries(err, facts) {
		return decision{}, false
	}
	return decision{Wait: connectWait(s.retry, interval), facts: facts}, true
}

// loginRetries reports whether the login loop may try again after err
// (facts): for SQL Server (family.Profile.JDBCLogin), JDBC's login():
// every failure isFatalError does
// not name, a server error that no rule names included (the wire
// comparison with the JDBC driver holds crl to it). MySQL and PostgreSQL
// have no JDBC login() to follow, and a server error in their login is
// one of configuration (an unknown database, a session setting the server
// rejects) that another try cannot fix: it is retried only when the
// connection rules name it (retryConn) and otherwise runs once. A network
// failure is retried for every family.
func (p *Policy) loginRetries(err error, facts errorFacts) bool {
	if loginFatal(err) {
		return false
	}
	if isServerError(err) && !facts.family.Profile().JDBCLogin {
		return p.Connection.retryable(facts, true)
	}
	return true
}

// connectWait is the wait before retry (0-based) of either connection
// loop: the first retry is immediate, later ones wait the interval.
func connectWait(retry int, interval time.Duration) time.Duration {
	if retry == 0 {
		return 0
	}
	return interval
}

// batchRefusal returns why query may not be retried on its own under rule r,
// or "" when it may. A text without ';' is one statement at most, so
// only a procedure call is in question, and only under a rule without a
// filter: that saves the scan on the usual error path.
func batchRefusal(query string, r *Rule) string {
	if len(r.filter) > 0 && strings.IndexByte(query, ';') < 0 {
		// With a filter the rule's filter matched the statement's first
		// word (exec, execute, call, or the procedure's name): the rule
		// names it.
		return ""
	}
	return batchRisk(query, r)
}

// retriedBelow reports whether err holds the give-up of a statement or
// transaction loop: the loop that returned it has already retried (or
// refused to retry) what failed. A connection loop's give-up is not one:
// retryConn's rules are not retryExec's, and a statement rule may retry
// what the connection loop gave up on.
func retriedBelow(err error) bool {
	for err != nil {
		switch e := err.(type) {
		case *RetryError:
			return e.final
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				if retriedBelow(x) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// brokenWrite returns why a statement whose connection broke (f) may not be
// run again, or "" when it may: a statement that writes may have been
// applied before the answer was lost, so only a text whose every
// statement reads is run again.
func brokenWrite(query string, f *errorFacts) string {
	if f.family != familyNone || !f.badConn() {
		return "" // the server answered: the connection did not break
	}
	if s := shapeOf(query); s.statements > 0 && s.reads == s.statements {
		return ""
	}
	return "the connection broke: the statement may have been applied"
}
