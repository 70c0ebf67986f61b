package core_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/internal/tables/limits"
)

var econnrefused = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}

// login is a login attempt that fails with err after taking took of
// virtual time; it records when each attempt started.
type login struct {
	clock  *coretest.Clock
	start  time.Time
	took   time.Duration
	err    error
	starts []time.Duration
}

func (l *login) attempt(context.Context) error {
	l.starts = append(l.starts, l.clock.Now().Sub(l.start))
	l.clock.Advance(l.took)
	return l.err
}

func secs(v ...float64) []time.Duration { return coretest.Seconds(v...) }

// TestConnectLoginLoop checks Connect against the two loops of the JDBC
// driver (SQLServerConnection.connect around SQLServerConnection.login),
// attempt by attempt, on the virtual clock. The expected start times are
// worked out from the driver's code in docs/semantics.md (issue 11, item 7).
func TestConnectLoginLoop(t *testing.T) {
	conn := func(s string) core.ConnectionRules {
		c, err := core.ParseConnectionRules(s)
		require.NoError(t, err)
		return c
	}
	for _, tc := range []struct {
		name   string
		policy core.Policy
		err    error
		took   time.Duration
		starts []time.Duration // when each attempt started
		reason error           // nil: the error unchanged
	}{
		// JDBC with defaults: a persistent 40613 gets 4 logins.
		{"defaults, 40613", core.Policy{}, serverError{40613}, 0, secs(0, 0, 0, 0), core.ErrRetriesExhausted},
		// The login loop waits connectRetryInterval after its first retry;
		// 20 s elapsed + 10 s reaches loginTimeout: no second round.
		{"count 3, 40613", core.Policy{ConnectRetryCount: 3}, serverError{40613}, 0, secs(0, 0, 10, 20), core.ErrLoginTimeout},
		// With a longer loginTimeout, three rounds; the third is cut at
		// start + loginTimeout (JDBC would run on to 70 s).
		{"count 3, loginTimeout 60, 40613", core.Policy{ConnectRetryCount: 3, LoginTimeout: time.Minute}, serverError{40613}, 0,
			secs(0, 0, 10, 20, 20, 20, 30, 40, 50, 50, 60), core.ErrLoginTimeout},
		// Slow attempts: the login loop needs connectRetryInterval plus
		// twice the first attempt's time left (22 s < 10 s + 16 s).
		{"slow attempts", core.Policy{}, serverError{40613}, 8 * time.Second, secs(0, 8), core.ErrRetriesExhausted},
		// Socket errors: retried by the login loop only, unless retryConn names them.
		{"10061", core.Policy{}, fmt.Errorf("dial: %w", econnrefused), 0, secs(0, 0), core.ErrNotRetryable},
		{"10060", core.Policy{}, fmt.Errorf("dial: %w", syscall.ETIMEDOUT), 0, secs(0, 0), core.ErrNotRetryable},
		{"10061 named", core.Policy{Connection: conn("{+10061}")}, fmt.Errorf("dial: %w", econnrefused), 0, secs(0, 0, 0, 0), core.ErrRetriesExhausted},
		{"dropped during login", core.Policy{}, fmt.Errorf("read: %w", io.EOF), 0, secs(0, 0), core.ErrNotRetryable},
		// Fatal for the login loop, not in the list.
		{"18456", core.Policy{ConnectRetryCount: 5}, serverError{18456}, 0, secs(0), nil},
		{"18488", core.Policy{ConnectRetryCount: 5}, serverError{18488}, 0, secs(0), nil},
		{"tls", core.Policy{ConnectRetryCount: 5}, fmt.Errorf("TLS Handshake failed: %w", x509.UnknownAuthorityError{}), 0, secs(0), nil},
		{"configuration", core.Policy{ConnectRetryCount: 5}, errors.New("mssql: invalid packet size"), 0, secs(0), nil},
		// A DSN that net/url cannot read: a *url.Error is a net.Error by
		// its methods, but a configuration error; one that wraps a dial
		// failure (a token provider's request) is a network failure.
		{"url parse", core.Policy{ConnectRetryCount: 5}, &url.Error{Op: "parse", URL: "sqlserver://db:notaport", Err: errors.New(`invalid port ":notaport" after host`)}, 0, secs(0), nil},
		{"url escape", core.Policy{ConnectRetryCount: 5}, fmt.Errorf("cannot parse: %w", &url.Error{Op: "parse", URL: "postgres://db/x%zz", Err: url.EscapeError("%zz")}), 0, secs(0), nil},
		{"url dial", core.Policy{}, &url.Error{Op: "Post", URL: "https://login.example/token", Err: econnrefused}, 0, secs(0, 0), core.ErrNotRetryable},
		// A SQL Server error that is not fatal and not in the list: the
		// login loop retries it (JDBC's login()), the connection loop does
		// not. A MySQL or PostgreSQL server error that no rule names runs
		// once: there is no JDBC login() to follow, and another try cannot
		// fix a configuration error (docs/semantics.md).
		{"4064 not listed", core.Policy{}, serverError{4064}, 0, secs(0, 0), core.ErrNotRetryable},
		{"mysql 1064 not listed", core.Policy{}, &mysql.MySQLError{Number: 1064, Message: "You have an error in your SQL syntax"}, 0, secs(0), nil},
		{"postgres 42704 not listed", core.Policy{}, &pgLike{"42704"}, 0, secs(0), nil},
		// Named by retryConn, it is retried by both loops.
		{"4064 named", core.Policy{Connection: conn("{+4064}")}, serverError{4064}, 0, secs(0, 0, 0, 0), core.ErrRetriesExhausted},
		{"42704 named", core.Policy{Connection: conn("{+42704}")}, &pgLike{"42704"}, 0, secs(0, 0, 0, 0), core.ErrRetriesExhausted},
		{"disabled", core.Policy{ConnectRetryCount: core.Disabled}, serverError{40613}, 0, secs(0), nil},
		// The builtin list holds SQL Server's numbers: a MySQL error that
		// shares one is not in it (and, no rule naming it, runs once), and
		// one that retryConn names is retried.
		{"mysql 4060", core.Policy{}, &mysql.MySQLError{Number: 4060}, 0, secs(0), nil},
		{"mysql 1040 named", core.Policy{Connection: conn("{+1040}")}, &mysql.MySQLError{Number: 1040}, 0, secs(0, 0, 0, 0), core.ErrRetriesExhausted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := &coretest.Observer{}
			r, clock := newRetrier(t, tc.policy, core.Options{Observer: obs})
			l := &login{clock: clock, start: clock.Now(), took: tc.took, err: tc.err}
			ctx := context.WithValue(context.Background(), connectKey{}, tc.name)
			err := r.Connect(ctx, l.attempt)
			assert.Equal(t, tc.starts, l.starts, "attempt start times")
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.err)
			if tc.reason == nil {
				assert.Equal(t, tc.err, err, "a first attempt that is not retried returns its error unchanged")
			} else {
				assert.ErrorIs(t, err, tc.reason)
				var re *core.RetryError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, len(tc.starts), re.Attempts)
			}
			conns := obs.Snapshot().Retries
			assert.Len(t, conns, len(tc.starts)-1, "one RetryScheduled per retry")
			for _, e := range conns { // one operation: the caller's context, one Op
				assert.Equal(t, core.KindConnection, e.Kind)
				assert.Equal(t, ctx, e.Context)
				assert.Equal(t, conns[0].Op, e.Op)
			}
			assert.LessOrEqual(t, clock.Now().Sub(l.start), tc.policy.LoginTimeout+limits.DefaultLoginTimeout*time.Duration(boolInt(tc.policy.LoginTimeout == 0)))
		})
	}
}

type connectKey struct{}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestConnectEndsAtLoginTimeout: the whole connection algorithm ends at
// start + loginTimeout: each attempt gets the time left. Before, each
// attempt got a fresh loginTimeout, so a login that hangs after two quick
// failures and a 10 s wait ran to ~40 s of a 30 s loginTimeout (issue 9,
// item 6).
func TestConnectEndsAtLoginTimeout(t *testing.T) {
	r, clock := newRetrier(t, core.Policy{ConnectRetryCount: 2}, core.Options{})
	start := clock.Now()
	calls := 0
	err := r.Connect(context.Background(), func(ctx context.Context) error {
		calls++
		dl, ok := ctx.Deadline()
		require.True(t, ok, "an attempt without a deadline")
		elapsed := clock.Now().Sub(start)
		assert.InDelta(t, float64(limits.DefaultLoginTimeout), float64(elapsed+time.Until(dl)), float64(time.Second),
			"attempt %d at %v may run %v", calls, elapsed, time.Until(dl))
		if calls <= 2 {
			return serverError{40613}
		}
		// Hang until the attempt's deadline, as a server that never answers.
		clock.Advance(time.Until(dl))
		return fmt.Errorf("login: %w", context.DeadlineExceeded)
	})
	require.Equal(t, 3, calls)
	assert.InDelta(t, float64(limits.DefaultLoginTimeout), float64(clock.Now().Sub(start)), float64(time.Second),
		"the loop outlived loginTimeout")
	assert.ErrorIs(t, err, core.ErrLoginTimeout)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

// TestConnectWithAFixedDateClock: the attempts' time limits are the time
// left by the Retrier's clock, so a virtual clock set to any date gives
// them the full loginTimeout, not a deadline already past.
func TestConnectWithAFixedDateClock(t *testing.T) {
	clock := coretest.NewClock(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))
	r, _ := newRetrier(t, core.Policy{}, core.Options{Clock: clock})
	err := r.Connect(context.Background(), func(ctx context.Context) error {
		dl, ok := ctx.Deadline()
		require.True(t, ok)
		assert.InDelta(t, float64(limits.DefaultLoginTimeout), float64(time.Until(dl)), float64(time.Second))
		return ctx.Err()
	})
	assert.NoError(t, err)
}

// TestConnectCallerContextEndsDuringLogin: a login that failed because
// the caller's context ended is not retried. The first attempt's error
// comes back unchanged (nothing was retried); after a retry it is a
// *RetryError with ErrDeadline that unwraps to the login error and the
// context's error.
func TestConnectCallerContextEndsDuringLogin(t *testing.T) {
	for _, failAt := range []int{1, 2} {
		t.Run(fmt.Sprintf("cancelled at attempt %d", failAt), func(t *testing.T) {
			r, _ := newRetrier(t, core.Policy{}, core.Options{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			loginErr := serverError{40613}
			calls := 0
			err := r.Connect(ctx, func(context.Context) error {
				calls++
				if calls == failAt {
					cancel()
				}
				return loginErr
			})
			require.Equal(t, failAt, calls, "attempts")
			if failAt == 1 {
				assert.Equal(t, error(loginErr), err)
				return
			}
			var re *core.RetryError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, failAt, re.Attempts)
			assert.ErrorIs(t, err, core.ErrDeadline)
			assert.ErrorIs(t, err, context.Canceled)
			assert.ErrorIs(t, err, loginErr)
		})
	}
}

// Every login attempt ends at the earlier of the caller's deadline and
// start + loginTimeout, and the loop never waits past either: a retry
// whose wait would outlast the caller's deadline is not waited for, it
// ends the loop at once (ErrDeadline), wrapping the last login error.
func TestConnectAttemptsEndByTheCallersDeadline(t *testing.T) {
	r, clock := newRetrier(t, core.Policy{ConnectRetryCount: 3, ConnectRetryInterval: 10 * time.Second, LoginTimeout: 30 * time.Second}, core.Options{})
	for _, tc := range []struct {
		name   string
		caller time.Duration // the caller's deadline from now
		want   time.Duration // the attempt's deadline from now, at most
	}{
		{"the caller's deadline first", 5 * time.Second, 5 * time.Second},
		{"loginTimeout first", time.Hour, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tc.caller)
			defer cancel()
			var deadlines []time.Time
			sleptBefore := len(clock.Sleeps())
			err := r.Connect(ctx, func(actx context.Context) error {
				dl, ok := actx.Deadline()
				require.True(t, ok, "every attempt has a deadline")
				deadlines = append(deadlines, dl)
				return serverError{40613}
			})
			require.Error(t, err)
			assert.ErrorIs(t, err, serverError{40613}, "the last login error, wrapped")
			for i, dl := range deadlines {
				assert.False(t, dl.After(time.Now().Add(tc.want)), "attempt %d ends by %v", i+1, tc.want)
			}
			for _, d := range clock.Sleeps()[sleptBefore:] {
				assert.Less(t, d, tc.caller, "no wait outlasts the caller's deadline")
			}
			if tc.caller < 10*time.Second {
				assert.ErrorIs(t, err, core.ErrDeadline, "the 10 s wait would pass the caller's deadline")
				assert.Len(t, deadlines, 2, "the first retry is immediate, the second would wait 10 s")
			}
		})
	}
}

// TestConnectMasksSecretsOfAttemptErrors: a login attempt's error that
// quotes a DSN reaches the events and the caller with its password
// masked, and still unwraps to the driver's error.
func TestConnectMasksSecretsOfAttemptErrors(t *testing.T) {
	dial := &url.Error{Op: "Post", URL: "https://app:S3cret@login.example/token", Err: econnrefused}
	obs := &coretest.Observer{}
	r, clock := newRetrier(t, core.Policy{Connection: mustConn(t, "{+10061}")}, core.Options{Observer: obs})
	l := &login{clock: clock, start: clock.Now(), err: dial}
	err := r.Connect(context.Background(), l.attempt)
	require.Error(t, err)
	assert.ErrorIs(t, err, dial)
	assert.NotContains(t, err.Error(), "S3cret")
	ev := obs.Snapshot()
	require.NotEmpty(t, ev.Retries)
	for _, e := range ev.Retries {
		assert.NotContains(t, e.Err.Error(), "S3cret")
		assert.ErrorIs(t, e.Err, dial)
	}
	require.NotEmpty(t, ev.GiveUps)
	for _, e := range ev.GiveUps {
		assert.NotContains(t, e.Err.Error(), "S3cret")
	}
}

func mustConn(t *testing.T, s string) core.ConnectionRules {
	t.Helper()
	c, err := core.ParseConnectionRules(s)
	require.NoError(t, err)
	return c
}
