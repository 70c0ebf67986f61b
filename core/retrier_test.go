package core_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
	if err != nil {
		t.Fatal(err)
	}
	return r, clock
}

func mustRules(t *testing.T, s string) core.StatementRules {
	t.Helper()
	r, err := core.ParseStatementRules(s)
	if err != nil {
		t.Fatal(err)
	}
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
	if calls != 4 {
		t.Errorf("attempts = %d, want count+1 = 4", calls)
	}
	if got, want := clock.Sleeps(), coretest.Seconds(2, 4, 8); !slices.Equal(got, want) {
		t.Errorf("waits = %v, want %v", got, want)
	}
	if !errors.Is(err, core.ErrRetriesExhausted) {
		t.Errorf("err = %v, want ErrRetriesExhausted", err)
	}
	var se serverError
	if !errors.As(err, &se) || se.number != 1205 {
		t.Errorf("errors.As driver error failed: %v", err)
	}
	if !strings.Contains(err.Error(), "after 4 attempts") {
		t.Errorf("message %q should tell the attempts", err)
	}
	var re *core.RetryError
	if !errors.As(err, &re) || re.Attempts != 4 {
		t.Errorf("RetryError.Attempts wrong: %v", err)
	}
	snap := obs.Snapshot()
	if len(snap.Retries) != 3 || len(snap.GiveUps) != 1 || snap.Retries[2].Wait != 8*time.Second || snap.Retries[0].Token != "1205" {
		t.Errorf("events = %+v", snap)
	}
}

func TestStatementSucceedsAfterRetries(t *testing.T) {
	obs := &coretest.Observer{}
	r, clock := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:3,5+5}")}, core.Options{Observer: obs})
	calls := 0
	if err := r.Do(context.Background(), "update t set a=1", failing(&calls, serverError{1205}, serverError{1205})); err != nil {
		t.Fatal(err)
	}
	if calls != 3 || !slices.Equal(clock.Sleeps(), coretest.Seconds(5, 10)) {
		t.Errorf("calls %d waits %v", calls, clock.Sleeps())
	}
	if s := obs.Snapshot().Successes; len(s) != 1 || s[0].Attempts != 3 {
		t.Errorf("Succeeded events = %+v", s)
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
		if err != tc.err {
			t.Errorf("%s: err = %v, want the driver's error unchanged", name, err)
		}
		if calls != 1 {
			t.Errorf("%s: %d attempts, want 1", name, calls)
		}
	}
	if len(clock.Sleeps()) != 0 {
		t.Errorf("waited %v", clock.Sleeps())
	}
	// After a retry, a non-retryable error is wrapped and still unwraps.
	calls := 0
	unique := serverError{2627}
	err := r.Do(context.Background(), "select 1", failing(&calls, serverError{1205}, unique))
	if !errors.Is(err, core.ErrNotRetryable) || !errors.Is(err, unique) || calls != 2 {
		t.Errorf("err = %v after %d calls", err, calls)
	}
}

func TestQueryTimeoutRefusesLongWaits(t *testing.T) {
	r, clock := newRetrier(t, core.Policy{Statement: mustRules(t, "{2714,2716:11,2+2:CREATE}"), QueryTimeout: 3 * time.Second}, core.Options{})
	calls := 0
	driverErr := serverError{2714}
	err := r.Do(context.Background(), "create table t (c1 int)", failing(&calls, repeat(driverErr, 20)...))
	if !errors.Is(err, core.ErrInvalidRetryInterval) || !errors.Is(err, driverErr) {
		t.Fatalf("err = %v, want ErrInvalidRetryInterval wrapping the driver error", err)
	}
	// Waits 2 (≤3) then 4 (>3): two attempts.
	if calls != 2 || !slices.Equal(clock.Sleeps(), coretest.Seconds(2)) {
		t.Errorf("calls %d waits %v", calls, clock.Sleeps())
	}

	// queryTimeout=0 (JDBC): a zero wait is fine, any positive wait is refused.
	r0, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:3}"), QueryTimeout: core.QueryTimeoutZero}, core.Options{})
	calls = 0
	err = r0.Do(context.Background(), "select 1", failing(&calls, repeat(serverError{1205}, 5)...))
	if !errors.Is(err, core.ErrInvalidRetryInterval) || calls != 2 {
		t.Errorf("queryTimeout=0: err %v after %d calls", err, calls)
	}
}

func TestQueryTimeoutBoundsEachAttempt(t *testing.T) {
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{timeout:2,0+0}"), QueryTimeout: 20 * time.Millisecond}, core.Options{})
	calls := 0
	start := time.Now()
	err := r.Do(context.Background(), "select 1", func(ctx context.Context) error {
		calls++
		dl, ok := ctx.Deadline()
		if !ok || time.Until(dl) > 20*time.Millisecond {
			t.Errorf("attempt not bounded by queryTimeout: %v %v", dl, ok)
		}
		<-ctx.Done()
		return ctx.Err()
	})
	if calls != 3 || !errors.Is(err, core.ErrRetriesExhausted) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v after %d calls", err, calls)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
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
	if calls != 2 || !slices.Equal(clock.Sleeps(), coretest.Seconds(2)) {
		t.Errorf("calls %d waits %v", calls, clock.Sleeps())
	}
	if !errors.Is(err, core.ErrDeadline) || !errors.Is(err, driverErr) {
		t.Errorf("err = %v", err)
	}
}

func TestCancellationDuringWait(t *testing.T) {
	r, err := core.NewRetrier(core.Policy{Statement: mustRules(t, "{1205:1,10}")}, core.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	driverErr := serverError{1205}
	err = r.Do(ctx, "select 1", func(context.Context) error { return driverErr })
	if time.Since(start) > 2*time.Second {
		t.Fatalf("a cancelled wait took %v", time.Since(start))
	}
	if !errors.Is(err, context.Canceled) || !errors.Is(err, driverErr) || !errors.Is(err, core.ErrDeadline) {
		t.Errorf("err = %v", err)
	}
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
		if !slices.Equal(clock.Sleeps(), tc.want) {
			t.Errorf("%v: waits %v, want %v", tc.j, clock.Sleeps(), tc.want)
		}
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
	if err != nil || calls != 3 || !slices.Equal(clock.Sleeps(), coretest.Seconds(1, 3)) {
		t.Errorf("err %v calls %d waits %v", err, calls, clock.Sleeps())
	}
	// The filter is checked against the statement that failed.
	calls = 0
	driverErr := serverError{1205}
	err = r.DoTx(context.Background(), func(context.Context) (string, error) {
		calls++
		return "delete from t", driverErr
	})
	if err != driverErr || calls != 1 {
		t.Errorf("filter mismatch: err %v calls %d", err, calls)
	}
	// A commit whose outcome is unknown is never retried.
	calls = 0
	unknown := fmt.Errorf("commit: %w: %w", core.ErrCommitUnknown, serverError{1205})
	err = r.DoTx(context.Background(), func(context.Context) (string, error) {
		calls++
		return "insert into t values (1)", unknown
	})
	if !errors.Is(err, core.ErrCommitUnknown) || calls != 1 {
		t.Errorf("commit unknown: err %v calls %d", err, calls)
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
	if calls != 3 {
		t.Errorf("attempts = %d, want 3", calls)
	}
	if got := clock.Sleeps(); !slices.Equal(got, []time.Duration{0, 2 * time.Second}) {
		t.Errorf("waits = %v, want [0 2s]", got)
	}
	if !errors.Is(err, core.ErrLoginTimeout) || !errors.Is(err, failover) {
		t.Errorf("err = %v", err)
	}
	if c := obs.Snapshot().Retries; len(c) != 2 || c[0].Kind != core.KindConnection || c[0].Wait != 0 || c[1].Wait != 2*time.Second {
		t.Errorf("connection events = %+v", c)
	}
}

func TestConnectDefaultsAndLists(t *testing.T) {
	conn := func(s string) core.ConnectionRules {
		c, err := core.ParseConnectionRules(s)
		if err != nil {
			t.Fatal(err)
		}
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
		// The login loop retries every error that is not fatal, whatever
		// retryConn says; the connection loop then stops.
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
			if err == nil || !errors.Is(err, tc.err) {
				t.Errorf("err = %v", err)
			}
			if calls != tc.calls || !slices.Equal(clock.Sleeps(), tc.waits) {
				t.Errorf("calls %d waits %v, want %d %v", calls, clock.Sleeps(), tc.calls, tc.waits)
			}
		})
	}
}

func TestNoBudget(t *testing.T) {
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:1}")}, core.Options{} /* nil Budget: off */)
	if r.Budget() != nil {
		t.Fatal("budget not off")
	}
	executions := 0
	for i := 0; i < 300; i++ {
		_ = r.Do(context.Background(), "update t set n = n + 1", func(context.Context) error { executions++; return serverError{1205} })
	}
	if executions != 600 {
		t.Errorf("%d executions, want 600", executions)
	}
}

func TestSetPolicyAndRefresh(t *testing.T) {
	var refreshed atomic.Int32
	r, _ := newRetrier(t, core.Policy{}, core.Options{Refresh: func() { refreshed.Add(1) }})
	calls := 0
	driverErr := serverError{1205}
	if err := r.Do(context.Background(), "update t set n = n + 1", failing(&calls, driverErr)); err != driverErr {
		t.Fatalf("no rules: %v", err)
	}
	if err := r.SetPolicy(core.Policy{Statement: mustRules(t, "{1205:1}")}); err != nil {
		t.Fatal(err)
	}
	calls = 0
	if err := r.Do(context.Background(), "update t set n = n + 1", failing(&calls, driverErr)); err != nil || calls != 2 {
		t.Errorf("after SetPolicy: %v, %d calls", err, calls)
	}
	if refreshed.Load() != 2 {
		t.Errorf("Refresh called %d times", refreshed.Load())
	}
	if err := r.SetPolicy(core.Policy{ConnectRetryCount: 256}); err == nil || !strings.Contains(err.Error(), "256") {
		t.Errorf("SetPolicy accepted connectRetryCount 256: %v", err)
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
		if _, err := core.NewRetrier(p, core.Options{}); err == nil {
			t.Errorf("NewRetrier(%+v) accepted", p)
		}
	}
}

func TestRetryGeneric(t *testing.T) {
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:2}")}, core.Options{})
	calls := 0
	v, err := core.Retry(context.Background(), r, "select 1", func(context.Context) (int, error) {
		calls++
		if calls == 1 {
			return 0, serverError{1205}
		}
		return 42, nil
	})
	if v != 42 || err != nil {
		t.Errorf("Retry = %v, %v", v, err)
	}
}
