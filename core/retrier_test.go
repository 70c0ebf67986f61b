package core_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
)

// serverError stands in for a driver error that carries a SQL Server error
// number (go-mssqldb's mssql.Error has the same method). The real driver is
// exercised end to end in sqlxcrl and gormcrl against mssqltest.
type serverError struct{ number int32 }

func (e serverError) Error() string         { return fmt.Sprintf("mssql: error %d", e.number) }
func (e serverError) SQLErrorNumber() int32 { return e.number }

func newRetrier(t *testing.T, p core.Policy, o core.Options) (*core.Retrier, *coretest.Clock) {
	t.Helper()
	clock := coretest.NewClock(time.Time{})
	if o.Clock == nil {
		o.Clock = clock
	}
	r, err := core.NewRetrier(p, o)
	require.NoError(t, err)
	return r, clock
}

func mustRules(t *testing.T, s string) core.StatementRules {
	t.Helper()
	r, err := core.ParseStatementRules(s)
	require.NoError(t, err)
	return r
}

// failing returns a statement that fails with the given errors in turn,
// then succeeds, counting calls.
func failing(calls *int, errs ...error) func(context.Context) error {
	return func(context.Context) error {
		*calls++
		if *calls <= len(errs) {
			return errs[*calls-1]
		}
		return nil
	}
}

func repeat(err error, n int) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}

func TestStatementWaitsAreTheSchedule(t *testing.T) {
	obs := &coretest.Observer{}
	r, clock := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205,1222:3,2*2:select,update}")}, core.Options{Observer: obs})
	calls := 0
	deadlock := serverError{1205}
	err := r.Do(context.Background(), "SELECT * FROM t", failing(&calls, repeat(deadlock, 10)...))
	assert.Equal(t, 4, calls, "attempts, want count+1")
	assert.Equal(t, coretest.Seconds(2, 4, 8), clock.Sleeps(), "waits")
	assert.ErrorIs(t, err, core.ErrRetriesExhausted)
	var se serverError
	if assert.ErrorAs(t, err, &se, "errors.As driver error") {
		assert.Equal(t, int32(1205), se.number, "errors.As driver error")
	}
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), "after 4 attempts", "the message should tell the attempts")
	}
	var re *core.RetryError
	if assert.ErrorAs(t, err, &re) {
		assert.Equal(t, 4, re.Attempts, "RetryError.Attempts")
	}
	snap := obs.Snapshot()
	if assert.Len(t, snap.Retries, 3, "events = %+v", snap) {
		assert.Equal(t, 8*time.Second, snap.Retries[2].Wait, "events = %+v", snap)
		assert.Equal(t, "1205", snap.Retries[0].Token, "events = %+v", snap)
	}
	assert.Len(t, snap.GiveUps, 1, "events = %+v", snap)
}

func TestStatementSucceedsAfterRetries(t *testing.T) {
	obs := &coretest.Observer{}
	r, clock := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:3,5+5}")}, core.Options{Observer: obs})
	calls := 0
	require.NoError(t, r.Do(context.Background(), "update t set a=1", failing(&calls, serverError{1205}, serverError{1205})))
	assert.Equal(t, 3, calls, "calls")
	assert.Equal(t, coretest.Seconds(5, 10), clock.Sleeps(), "waits")
	if s := obs.Snapshot().Successes; assert.Len(t, s, 1, "Succeeded events = %+v", s) {
		assert.Equal(t, 3, s[0].Attempts, "Succeeded events = %+v", s)
	}
}

func TestStatementErrorsReturnedUnchanged(t *testing.T) {
	r, clock := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:3,1:select,update}")}, core.Options{})
	for name, tc := range map[string]struct {
		query string
		err   error
	}{
		"no rule":         {"select 1", serverError{2627}},
		"filter mismatch": {"delete from t", serverError{1205}},
		"substring trap":  {"date", serverError{1205}},
		"no number":       {"select 1", errors.New("plain")},
	} {
		calls := 0
		err := r.Do(context.Background(), tc.query, failing(&calls, repeat(tc.err, 5)...))
		assert.True(t, err == tc.err, "%s: err = %v, want the driver's error unchanged", name, err) // the same error, not an equal one
		assert.Equal(t, 1, calls, "%s: attempts", name)
	}
	assert.Empty(t, clock.Sleeps(), "waits")
	// After a retry, a non-retryable error is wrapped and still unwraps.
	calls := 0
	unique := serverError{2627}
	err := r.Do(context.Background(), "select 1", failing(&calls, serverError{1205}, unique))
	assert.ErrorIs(t, err, core.ErrNotRetryable)
	assert.ErrorIs(t, err, unique)
	assert.Equal(t, 2, calls, "calls")
}

func TestQueryTimeoutRefusesLongWaits(t *testing.T) {
	r, clock := newRetrier(t, core.Policy{Statement: mustRules(t, "{2714,2716:11,2+2:CREATE}"), QueryTimeout: 3 * time.Second}, core.Options{})
	calls := 0
	driverErr := serverError{2714}
	err := r.Do(context.Background(), "create table t (c1 int)", failing(&calls, repeat(driverErr, 20)...))
	require.ErrorIs(t, err, core.ErrInvalidRetryInterval)
	require.ErrorIs(t, err, driverErr, "ErrInvalidRetryInterval wrapping the driver error")
	// Waits 2 (≤3) then 4 (>3): two attempts.
	assert.Equal(t, 2, calls, "calls")
	assert.Equal(t, coretest.Seconds(2), clock.Sleeps(), "waits")

	// queryTimeout=0 (JDBC): a zero wait is fine, any positive wait is refused.
	r0, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:3}"), QueryTimeout: core.JDBCQueryTimeoutZero}, core.Options{})
	calls = 0
	err = r0.Do(context.Background(), "select 1", failing(&calls, repeat(serverError{1205}, 5)...))
	assert.ErrorIs(t, err, core.ErrInvalidRetryInterval, "queryTimeout=0")
	assert.Equal(t, 2, calls, "queryTimeout=0: calls")
}

func TestQueryTimeoutBoundsEachAttempt(t *testing.T) {
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{timeout:2,0+0}"), QueryTimeout: 20 * time.Millisecond}, core.Options{})
	calls := 0
	start := time.Now()
	err := r.Do(context.Background(), "select 1", func(ctx context.Context) error {
		calls++
		dl, ok := ctx.Deadline()
		if assert.True(t, ok, "attempt without a deadline") {
			assert.LessOrEqual(t, time.Until(dl), 20*time.Millisecond, "attempt not bounded by queryTimeout: %v", dl)
		}
		<-ctx.Done()
		return ctx.Err()
	})
	assert.Equal(t, 3, calls, "calls")
	assert.ErrorIs(t, err, core.ErrRetriesExhausted)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.LessOrEqual(t, time.Since(start), 2*time.Second, "time taken")
}

func TestDeadlineCheckedBeforeEachWait(t *testing.T) {
	clock := coretest.NewClock(time.Now())
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:3,2*2}")}, core.Options{Clock: clock})
	ctx, cancel := context.WithDeadline(context.Background(), clock.Now().Add(3*time.Second))
	defer cancel()
	calls := 0
	driverErr := serverError{1205}
	err := r.Do(ctx, "select 1", failing(&calls, repeat(driverErr, 5)...))
	// Wait 2 s fits (now+2 < now+3); the next wait 4 s would pass the deadline.
	assert.Equal(t, 2, calls, "calls")
	assert.Equal(t, coretest.Seconds(2), clock.Sleeps(), "waits")
	assert.ErrorIs(t, err, core.ErrDeadline)
	assert.ErrorIs(t, err, driverErr)
}

func TestCancellationDuringWait(t *testing.T) {
	r, err := core.NewRetrier(core.Policy{Statement: mustRules(t, "{1205:1,10}")}, core.Options{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	driverErr := serverError{1205}
	err = r.Do(ctx, "select 1", func(context.Context) error { return driverErr })
	require.LessOrEqual(t, time.Since(start), 2*time.Second, "time a cancelled wait took")
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, driverErr)
	assert.ErrorIs(t, err, core.ErrDeadline)
}

func TestJitter(t *testing.T) {
	for _, tc := range []struct {
		j    core.Jitter
		want []time.Duration
	}{
		{core.JitterNone, coretest.Seconds(2, 4)},
		{core.JitterFull, coretest.Seconds(0.5, 1)},
		{core.JitterEqual, coretest.Seconds(1.25, 2.5)},
	} {
		r, clock := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:2,2*2}"), Jitter: tc.j}, core.Options{Random: func() float64 { return 0.25 }})
		calls := 0
		_ = r.Do(context.Background(), "update t set n = n + 1", failing(&calls, repeat(serverError{1205}, 5)...))
		assert.Equal(t, tc.want, clock.Sleeps(), "%v: waits", tc.j)
	}
}

func TestDoTx(t *testing.T) {
	r, clock := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:2,1:insert,update}")}, core.Options{})
	calls := 0
	err := r.DoTx(context.Background(), func(context.Context) (string, error) {
		calls++
		if calls < 3 {
			return "INSERT INTO t VALUES (1)", serverError{1205}
		}
		return "", nil
	})
	assert.NoError(t, err)
	assert.Equal(t, 3, calls, "calls")
	assert.Equal(t, coretest.Seconds(1, 3), clock.Sleeps(), "waits")
	// The filter is checked against the statement that failed.
	calls = 0
	driverErr := serverError{1205}
	err = r.DoTx(context.Background(), func(context.Context) (string, error) {
		calls++
		return "delete from t", driverErr
	})
	assert.Equal(t, driverErr, err, "filter mismatch: the driver's error unchanged")
	assert.Equal(t, 1, calls, "filter mismatch: calls")
	// A commit whose outcome is unknown is never retried.
	calls = 0
	unknown := fmt.Errorf("commit: %w: %w", core.ErrCommitUnknown, serverError{1205})
	err = r.DoTx(context.Background(), func(context.Context) (string, error) {
		calls++
		return "insert into t values (1)", unknown
	})
	assert.ErrorIs(t, err, core.ErrCommitUnknown, "commit unknown")
	assert.Equal(t, 1, calls, "commit unknown: calls")
}

// A loop inside a transaction's function (a unit helper called inside
// another's closure, a statement outside the transaction) that gives up
// after its retries has decided: the transaction loop returns its error
// after one run, so the statement runs 1 + retryCount times, not their
// product. A connection loop's give-up is decided under retryConn, not
// the statement rules, which still retry it.
func TestDoTxLeavesAnInnerLoopsGiveUpToIt(t *testing.T) {
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205,40613:2,0}")}, core.Options{})
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		inner      func(calls *int) error
		innerCalls int // the inner loop's attempts in each run of the transaction
		runs       int
		number     int32
	}{
		{"transaction loop", func(calls *int) error {
			return r.DoTx(ctx, func(context.Context) (string, error) { *calls++; return "update t", serverError{1205} })
		}, 3, 1, 1205},
		{"statement loop", func(calls *int) error {
			return r.Do(ctx, "update t", func(context.Context) error { *calls++; return serverError{1205} })
		}, 3, 1, 1205},
		{"connection loop", func(calls *int) error { // JDBC's defaults: 4 logins
			return r.Connect(ctx, func(context.Context) error { *calls++; return serverError{40613} })
		}, 4, 3, 40613},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs, calls := 0, 0
			err := r.DoTx(ctx, func(context.Context) (string, error) {
				runs++
				return "", tc.inner(&calls)
			})
			assert.Equal(t, tc.runs, runs, "runs of the transaction")
			assert.Equal(t, tc.runs*tc.innerCalls, calls, "attempts of the inner loop")
			var re *core.RetryError
			require.ErrorAs(t, err, &re)
			n, _ := core.ErrorNumber(err)
			assert.Equal(t, tc.number, n, "the driver's error")
		})
	}
}

// The JDBC connection algorithm: connectRetryCount=5,
// connectRetryInterval=2, loginTimeout=3 gives 3 attempts: an immediate
// retry, one after 2 s, then 2 s elapsed + 2 s ≥ 3 s stops.
func TestConnectLoginTimeoutEarlyStop(t *testing.T) {
	obs := &coretest.Observer{}
	r, clock := newRetrier(t, core.Policy{ConnectRetryCount: 5, ConnectRetryInterval: 2 * time.Second, LoginTimeout: 3 * time.Second}, core.Options{Observer: obs})
	calls := 0
	failover := serverError{40613}
	err := r.Connect(context.Background(), failing(&calls, repeat(failover, 10)...))
	assert.Equal(t, 3, calls, "attempts")
	assert.Equal(t, []time.Duration{0, 2 * time.Second}, clock.Sleeps(), "waits")
	assert.ErrorIs(t, err, core.ErrLoginTimeout)
	assert.ErrorIs(t, err, failover)
	if c := obs.Snapshot().Retries; assert.Len(t, c, 2, "connection events = %+v", c) {
		assert.Equal(t, core.KindConnection, c[0].Kind, "connection events = %+v", c)
		assert.Equal(t, time.Duration(0), c[0].Wait, "connection events = %+v", c)
		assert.Equal(t, 2*time.Second, c[1].Wait, "connection events = %+v", c)
	}
}

func TestConnectDefaultsAndLists(t *testing.T) {
	conn := func(s string) core.ConnectionRules {
		c, err := core.ParseConnectionRules(s)
		require.NoError(t, err)
		return c
	}
	for _, tc := range []struct {
		name   string
		policy core.Policy
		err    error
		calls  int
		waits  []time.Duration
	}{
		// Defaults: the login loop tries twice (its retry immediate), the
		// connection loop runs it twice (its retry immediate): 4 logins.
		{"default: 2 × 2 logins", core.Policy{}, serverError{40613}, 4, []time.Duration{0, 0, 0}},
		{"disabled", core.Policy{ConnectRetryCount: core.Disabled}, serverError{40613}, 1, nil},
		{"fatal, not in the list", core.Policy{ConnectRetryCount: 3}, serverError{18456}, 1, nil},
		// 18456 is fatal for the login loop, but the connection loop
		// retries it when retryConn names it.
		{"appended", core.Policy{ConnectRetryCount: 3, Connection: conn("{+18456}")}, serverError{18456}, 4, []time.Duration{0, 10 * time.Second, 10 * time.Second}},
		{"append keeps builtin", core.Policy{ConnectRetryCount: 1, Connection: conn("{+18456}")}, serverError{40613}, 4, []time.Duration{0, 0, 0}},
		// The login loop retries every SQL Server error that is not
		// fatal, whatever retryConn says (JDBC's login()); the connection
		// loop then stops.
		{"replaced", core.Policy{ConnectRetryCount: 3, Connection: conn("{18456}")}, serverError{40613}, 4, []time.Duration{0, 10 * time.Second, 10 * time.Second}},
		{"replacement retried", core.Policy{ConnectRetryCount: 2, Connection: conn("{18456}")}, serverError{18456}, 3, []time.Duration{0, 10 * time.Second}},
		// A network failure: the login loop retries it, the connection
		// loop does not (the builtin list is for server errors).
		{"network reset", core.Policy{}, fmt.Errorf("read: %w", econnreset), 2, []time.Duration{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, clock := newRetrier(t, tc.policy, core.Options{})
			calls := 0
			err := r.Connect(context.Background(), failing(&calls, repeat(tc.err, 300)...))
			assert.ErrorIs(t, err, tc.err)
			assert.Equal(t, tc.calls, calls, "calls")
			// slices.Equal: no waits (nil) and an empty list are the same.
			assert.True(t, slices.Equal(clock.Sleeps(), tc.waits), "waits %v, want %v", clock.Sleeps(), tc.waits)
		})
	}
}

func TestNoBudget(t *testing.T) {
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:1}")}, core.Options{} /* nil Budget: off */)
	require.Nil(t, r.Budget(), "budget not off")
	executions := 0
	for i := 0; i < 300; i++ {
		_ = r.Do(context.Background(), "update t set n = n + 1", func(context.Context) error { executions++; return serverError{1205} })
	}
	assert.Equal(t, 600, executions, "executions")
}

func TestSetPolicyAndRefresh(t *testing.T) {
	var refreshed atomic.Int32
	r, _ := newRetrier(t, core.Policy{}, core.Options{Refresh: func() { refreshed.Add(1) }})
	calls := 0
	driverErr := serverError{1205}
	require.Equal(t, driverErr, r.Do(context.Background(), "update t set n = n + 1", failing(&calls, driverErr)), "no rules")
	require.NoError(t, r.SetPolicy(core.Policy{Statement: mustRules(t, "{1205:1}")}))
	calls = 0
	assert.NoError(t, r.Do(context.Background(), "update t set n = n + 1", failing(&calls, driverErr)), "after SetPolicy")
	assert.Equal(t, 2, calls, "after SetPolicy: calls")
	assert.Equal(t, int32(2), refreshed.Load(), "Refresh calls")
	if err := r.SetPolicy(core.Policy{ConnectRetryCount: 256}); assert.Error(t, err, "SetPolicy accepted connectRetryCount 256") {
		assert.Contains(t, err.Error(), "256", "SetPolicy(connectRetryCount 256)")
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, p := range []core.Policy{
		{ConnectRetryCount: 300},
		{ConnectRetryCount: -2},
		{ConnectRetryInterval: 61 * time.Second},
		{ConnectRetryInterval: time.Millisecond},
		{LoginTimeout: -time.Second},
		{QueryTimeout: -2},
		{Jitter: 9},
	} {
		_, err := core.NewRetrier(p, core.Options{})
		assert.Error(t, err, "NewRetrier(%+v) accepted", p)
	}
}

func TestRunKeepsTheSucceedingValue(t *testing.T) {
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:2}")}, core.Options{})
	calls := 0
	v, err := runValue(context.Background(), r, core.Op{Query: "select 1"}, func(context.Context) (int, error) {
		calls++
		if calls == 1 {
			return 0, serverError{1205}
		}
		return 42, nil
	})
	assert.NoError(t, err, "Run")
	assert.Equal(t, 42, v, "Run")
}

type optOutKey struct{}

// Options.NoRetry: a failure of an operation whose caller opted out is
// returned unchanged after one attempt, as an error no rule names (no
// event, no budget charge), by the statement and transaction loops and
// for an error after the first row; it is asked only when a rule would
// retry, never on the success path.
func TestOptionsNoRetry(t *testing.T) {
	asked := 0
	budget, err := core.NewBudget(core.BudgetSettings{})
	require.NoError(t, err)
	obs := &coretest.Observer{}
	r, clock := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:3,1}")}, core.Options{
		Observer: obs, Budget: budget,
		NoRetry: func(ctx context.Context) bool { asked++; return ctx.Value(optOutKey{}) != nil },
	})
	optedOut := context.WithValue(context.Background(), optOutKey{}, true)
	deadlock := serverError{1205}
	before := budget.Available()

	calls := 0
	err = r.Do(optedOut, "UPDATE t SET x = 1", failing(&calls, repeat(deadlock, 5)...))
	assert.Equal(t, error(deadlock), err, "the error itself")
	assert.Equal(t, 1, calls, "Do: attempts")
	runs := 0
	err = r.DoTx(optedOut, func(context.Context) (string, error) { runs++; return "UPDATE t SET x = 1", deadlock })
	assert.Equal(t, error(deadlock), err, "the error itself")
	assert.Equal(t, 1, runs, "DoTx: attempts")
	r.Unretried(optedOut, "SELECT x FROM t", deadlock)
	assert.Equal(t, coretest.Events{}, obs.Snapshot(), "no retry, no give-up")
	assert.Empty(t, clock.Sleeps(), "waits")
	assert.Equal(t, before, budget.Available(), "the budget is not charged")
	assert.Equal(t, 3, asked, "asked once per failure a rule would retry")

	asked, calls = 0, 0
	require.NoError(t, r.Do(optedOut, "UPDATE t SET x = 1", failing(&calls)))
	calls = 0
	assert.ErrorIs(t, r.Do(optedOut, "UPDATE t SET x = 1", failing(&calls, serverError{547})), serverError{547})
	assert.Zero(t, asked, "not asked on a success, nor for an error no rule names")

	calls = 0
	require.NoError(t, r.Do(context.Background(), "UPDATE t SET x = 1", failing(&calls, deadlock)))
	assert.Equal(t, 2, calls, "another caller's statement is retried")
}

// runValue is Run for a statement that returns a value, as the driver
// layer runs one: the value of the attempt that succeeded, the zero value
// on failure.
func runValue[T any](ctx context.Context, r *core.Retrier, op core.Op, fn func(context.Context) (T, error)) (T, error) {
	var out T
	err := r.Run(ctx, &op, func(ctx context.Context) error {
		v, err := fn(ctx)
		if err == nil {
			out = v
		}
		return err
	})
	return out, err
}
