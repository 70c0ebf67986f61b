package core

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/crl-go/crl/internal/text/redact"
)

// Connect is Run for a connection: it runs the JDBC driver's connection algorithm around fn, one login
// attempt (a new connection and its login). The driver nests two loops,
// and so does Connect (docs/semantics.md walks through both):
//
//   - the login loop (SQLServerConnection.login): a network failure, and a
//     server error that Policy.Connection names (the builtin list or the
//     retryConn rules) and that is not fatal (a wrong password, an expired
//     password or a locked account), is retried up to connectRetryCount
//     times, the first retry at once and later ones after
//     connectRetryInterval, while the time left before loginTimeout is at
//     least connectRetryInterval plus twice the time the first attempt
//     took. A TLS failure, an error that is neither a server error nor a
//     network failure, and a server error that no rule names run once
//     (JDBC's login loop retries the last: docs/semantics.md);
//   - the connection loop (SQLServerConnection.connect) around it: when the
//     login loop gives up on an error that Policy.Connection retries (a
//     server error in the builtin list or the retryConn rules; a network
//     failure only when retryConn names it), it runs the login loop again,
//     up to connectRetryCount times, the first time at once and later ones
//     after connectRetryInterval, unless the time elapsed since the start
//     plus connectRetryInterval reaches loginTimeout.
//
// The whole algorithm ends at start + loginTimeout: every attempt's
// context ends then (measured by the Retrier's clock: an attempt gets the
// time left of the loginTimeout as its timeout). An attempt's error whose
// text quotes a DSN (a driver's parse error) has its secrets masked
// before any event or the caller sees it, and still unwraps to the
// driver's error. Every retry of either
// loop spends the retry budget and emits RetryScheduled with
// KindConnection. A first attempt whose error is not retried (no rule
// retries it, or retries are off) returns that error unchanged; every
// other failure is a *RetryError that unwraps to the last attempt's error
// and to its reason (ErrLoginTimeout when loginTimeout ran out or leaves
// no time for a retry).
func (r *Retrier) Connect(ctx context.Context, fn func(ctx context.Context) error) error {
	return r.Run(ctx, &Op{Kind: KindConnection}, fn)
}

// connect is Run for a connection, its caller having refreshed the
// policy.
func (r *Retrier) connect(ctx context.Context, fn attemptFunc) (err error) {
	r.count(KindConnection)
	c := connectRun{r: r, p: r.policy.Load()}
	c.op = operation{ctx: ctx, kind: KindConnection, started: r.clock.Now()}
	c.deadline = c.op.started.Add(c.p.loginTimeout())
	if r.timed {
		err = errRunning // until the loop returns: see ended
		defer r.ended(&c.op, &err)
	}
	return c.run(fn)
}

// connectRun is the state of one Connect call.
type connectRun struct {
	r        *Retrier
	p        *Policy
	deadline time.Time // start + loginTimeout, by the Retrier's clock
	op       operation // the caller's context, and what the events share
	attempts int
}

// run is JDBC's connect(): the connection loop around the login loop.
// It takes fn beside c: stored in c, it would leak with the context that
// the events hand to the observer.
func (c *connectRun) run(fn attemptFunc) error {
	for retry := 0; ; retry++ {
		err, stop := c.loginLoop(fn)
		if err == nil {
			c.r.budget.earn()
			if c.attempts > 1 {
				c.r.succeeded(&c.op, c.attempts)
			}
			return nil
		}
		if stop != nil {
			return stop
		}
		d := c.p.decideConnection(connectState{retry: retry, elapsed: c.r.clock.Now().Sub(c.op.started)}, err)
		if d.Reason != nil {
			c.r.budget.settle(&d)
			return c.giveUp(d, err)
		}
		if stop := c.r.schedule(&c.op, c.attempts, err, d.Wait, d); stop != nil {
			return stop
		}
	}
}

// loginLoop is JDBC's login(): it runs fn until it succeeds, fails with a
// fatal error, or runs out of retries or time, and returns the last error.
// stop is the error to return at once (the caller's context ended, the
// budget refused a retry), nil when the connection loop decides.
func (c *connectRun) loginLoop(fn attemptFunc) (err, stop error) {
	began := c.r.clock.Now()
	var firstTry time.Duration
	for retry := 0; ; retry++ {
		caller := c.op.ctx // the observer's RetryContext may have given the retries a context of its own
		c.attempts++
		actx, cancel := context.WithTimeout(caller, c.deadline.Sub(c.r.clock.Now()))
		// A driver's error about a DSN it cannot read quotes the DSN,
		// password included: masked here, before any event or caller
		// sees it.
		err := redact.Error(fn(actx))
		expired := err != nil && actx.Err() != nil && caller.Err() == nil
		cancel()
		if err == nil {
			return nil, nil
		}
		now := c.r.clock.Now()
		if retry == 0 {
			firstTry = now.Sub(began)
		}
		if cerr := caller.Err(); cerr != nil {
			if c.attempts == 1 { // nothing was retried: the error unchanged
				return err, err
			}
			return err, c.r.giveUp(&c.op, c.attempts, ErrDeadline, err, cerr, "context ended during the login")
		}
		d, again := c.p.decideLogin(connectState{retry: retry, timedOut: expired}, err, c.deadline.Sub(now), firstTry)
		if !again {
			return err, nil
		}
		if stop := c.r.schedule(&c.op, c.attempts, err, d.Wait, d); stop != nil {
			return err, stop
		}
	}
}

// giveUp ends Connect with the connection loop's decision d after the
// login loop gave up on err: a *RetryError, or err unchanged when the only
// attempt failed with an error that is not retried (no rule, a fatal login
// error, connection retries off): nothing was retried and nothing refused.
func (c *connectRun) giveUp(d decision, err error) error {
	if c.attempts == 1 && (d.Reason == ErrNotRetryable || d.Reason == ErrRetriesExhausted) {
		return err
	}
	return c.r.giveUp(&c.op, c.attempts, d.Reason, err, nil, d.Detail)
}

// isServerError reports an error the database server sent: a SQL Server
// error number, a MySQL error number, or a SQLSTATE.
func isServerError(err error) bool {
	if _, ok := serverNumber(err); ok {
		return true
	}
	if _, ok := mysqlNumber(err); ok {
		return true
	}
	_, ok := sqlState(err)
	return ok
}

// SQL Server's login errors that JDBC's isFatalError never retries: login
// failed, password expired, account locked.
const (
	loginFailed     = 18456
	passwordExpired = 18488
	accountLocked   = 18486
)

// loginFatal reports a login failure that another try cannot fix, after
// JDBC's isFatalError: a failed login, an expired password or a locked
// account (and their MySQL and PostgreSQL counterparts), a TLS or
// certificate failure, and anything that is neither a server error nor a
// network failure (a configuration or protocol error, JDBC's
// DRIVER_ERROR_UNSUPPORTED_CONFIG and DRIVER_ERROR_INVALID_TDS). The
// login loop retries every network failure (refused, reset, timed out,
// dropped), and another server error when a rule names it
// (Policy.loginRetries).
func loginFatal(err error) bool {
	if n, ok := serverNumber(err); ok {
		return n == loginFailed || n == passwordExpired || n == accountLocked
	}
	if n, ok := mysqlNumber(err); ok {
		// access denied (without a password), password expired, account locked
		return n == 1045 || n == 1698 || n == 1862 || n == 3118
	}
	if st, ok := sqlState(err); ok {
		return strings.HasPrefix(st, "28") // invalid authorization
	}
	if tlsFailure(err) {
		return true
	}
	return !networkFailure(err)
}

// tlsFailure reports a TLS handshake or certificate failure.
func tlsFailure(err error) bool {
	var (
		alert    tls.AlertError
		header   tls.RecordHeaderError
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
	)
	return errors.As(err, &alert) || errors.As(err, &header) || errors.As(err, &verify) ||
		errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid)
}

// networkFailure reports a failure to reach the server or a connection
// lost during the login: a net.Error (refused, unreachable, DNS, time-out),
// a socket errno, an unexpected end of stream, driver.ErrBadConn.
//
// A *url.Error is a net.Error by its methods, but net/url's parser
// returns one for a DSN it cannot read (a port that is no number, a bad
// '%' escape): it is what it wraps, a network failure only when that is
// one (an HTTP request of a token provider that could not connect).
func networkFailure(err error) bool {
	if IsBadConn(err) || timedOut(err) {
		return true
	}
	if _, ok := socketNumber(err); ok {
		return true
	}
	return walk(err, func(e error) bool {
		if _, ok := e.(*url.Error); ok {
			return false
		}
		_, ok := e.(net.Error)
		return ok
	})
}
