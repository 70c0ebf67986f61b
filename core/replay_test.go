package core_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
)

// mysqlStyle stands in for a MySQL error for the family table: core reads
// go-sql-driver/mysql's *MySQLError by its type name, which a test cannot
// spell, so the replay tests use SQL Server's numbers and PostgreSQL's
// states, whose shapes are interfaces.
type pgError struct{ state string }

func (e *pgError) Error() string    { return "pg: " + e.state }
func (e *pgError) SQLState() string { return e.state }

func TestDigestTellsValuesApart(t *testing.T) {
	now := time.Date(2026, 12, 7, 3, 0, 0, 5, time.UTC)
	values := []any{nil, int64(1), "1", []byte("1"), float64(1), true, false, now, now.Add(1), uint64(1), "", []byte{}, "a longer string than eight"}
	seen := map[core.Digest]int{}
	for i, v := range values {
		var d core.Digest
		d.Add(v)
		j, dup := seen[d]
		assert.False(t, dup, "values %d and %d share a digest", i, j)
		seen[d] = i
	}
	// Every length of a string's tail (0 to 7 bytes past the last eight),
	// and one byte changed at every place.
	for n := 1; n < 18; n++ { // "" is among the values
		text := []byte("abcdefghijklmnopqr")[:n]
		var d core.Digest
		d.Add(string(text))
		j, dup := seen[d]
		assert.False(t, dup, "a string of %d bytes and value %d share a digest", n, j)
		seen[d] = 100 + n
		for k := range text {
			other := append([]byte(nil), text...)
			other[k] ^= 1
			var o core.Digest
			o.Add(string(other))
			assert.NotEqual(t, d, o, "%q and %q", text, other)
		}
	}
	var a, b core.Digest
	a.Add("x")
	a.Add("y")
	b.Add("y")
	b.Add("x")
	assert.NotEqual(t, a, b, "order matters")
	var c, e core.Digest
	c.Add([]byte("same bytes"))
	e.Add([]byte("same bytes"))
	assert.Equal(t, c, e)
	e.AddEnd()
	assert.NotEqual(t, c, e, "the end of the rows is part of what the caller saw")
}

func TestDigestAddAllocatesNothingForDriverValues(t *testing.T) {
	row := []any{int64(42), "name", []byte("bytes"), 1.5, true, nil, time.Unix(1, 0)}
	var d core.Digest
	allocs := testing.AllocsPerRun(100, func() {
		for _, v := range row {
			d.Add(v)
		}
	})
	assert.Zero(t, allocs)
}

func TestTxRecordLimitAndArguments(t *testing.T) {
	var rec core.TxRecord
	rec.Reset(2)
	i, args := rec.Add("UPDATE a SET x = ?", 1)
	require.Equal(t, 0, i)
	args[0] = int64(7)
	j, _ := rec.Add("SELECT 1", 0)
	require.Equal(t, 1, j)
	k, none := rec.Add("SELECT 2", 0)
	assert.Equal(t, -1, k)
	assert.Nil(t, none)
	q, got, _ := rec.Statement(0)
	assert.Equal(t, "UPDATE a SET x = ?", q)
	assert.Equal(t, []any{int64(7)}, got)
	assert.Equal(t, 2, rec.Len())
	rec.Reset(0)
	assert.Zero(t, rec.Len())
	allocs := testing.AllocsPerRun(100, func() {
		rec.Reset(0)
		_, a := rec.Add("UPDATE a SET x = ?", 1)
		a[0] = "v"
		rec.Saw(0, 1, core.Digest{})
	})
	assert.Zero(t, allocs, "a reused record allocates nothing per statement")
}

// fakeTx is a transaction for Replay: statements answer from answers
// (their digests), failures from fails, counted.
type fakeTx struct {
	rec        core.TxRecord
	answers    []core.Digest // what each re-sent statement answers now
	resendErr  map[int]error
	retryErrs  []error // the failed statement's answers, in order; nil after
	rollbacks  int
	begins     int
	resent     []int
	retries    int
	live       bool
	rollbackEr error
}

func (f *fakeTx) replay(query string) core.TxReplay {
	return core.TxReplay{
		Record:   &f.rec,
		Query:    query,
		Rollback: func(context.Context) error { f.rollbacks++; return f.rollbackEr },
		Begin:    func(context.Context) error { f.begins++; return nil },
		Resend: func(_ context.Context, i int) (core.Digest, error) {
			f.resent = append(f.resent, i)
			if err := f.resendErr[i]; err != nil {
				return core.Digest{}, err
			}
			return f.answers[i], nil
		},
		Retry: func(context.Context) error {
			f.retries++
			if len(f.retryErrs) > 0 {
				err := f.retryErrs[0]
				f.retryErrs = f.retryErrs[1:]
				return err
			}
			return nil
		},
		Live: func(context.Context) (bool, error) { return f.live, nil },
	}
}

// newFakeTx records n statements whose answers the caller saw.
func newFakeTx(n int) *fakeTx {
	f := &fakeTx{resendErr: map[int]error{}}
	f.rec.Reset(0)
	for i := 0; i < n; i++ {
		j, _ := f.rec.Add("UPDATE t SET v = v + 1", 0)
		var d core.Digest
		d.Add(int64(i))
		f.rec.Saw(j, 1, d)
		f.answers = append(f.answers, d)
	}
	return f
}

func replayRetrier(t *testing.T, rules string) (*core.Retrier, *coretest.Observer, *coretest.Clock) {
	t.Helper()
	obs := &coretest.Observer{}
	r, clock := newRetrier(t, core.Policy{Statement: mustRules(t, rules)}, core.Options{Observer: obs})
	return r, obs, clock
}

func TestReplayEqualAnswersRunTheFailedStatement(t *testing.T) {
	r, obs, clock := replayRetrier(t, "{1205:3,100ms}")
	f := newFakeTx(3)
	err := r.Replay(context.Background(), f.replay("UPDATE t SET v = 0"), serverError{1205})
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1, 2}, f.resent)
	assert.Equal(t, 1, f.rollbacks)
	assert.Equal(t, 1, f.begins)
	assert.Equal(t, 1, f.retries)
	assert.Equal(t, coretest.Seconds(0.1), clock.Sleeps())
	ev := obs.Snapshot()
	require.Len(t, ev.Retries, 1)
	assert.Equal(t, core.KindTransaction, ev.Retries[0].Kind)
	assert.True(t, ev.Retries[0].Replay)
	require.Len(t, ev.Successes, 1)
	assert.True(t, ev.Successes[0].Replay)
}

func TestReplayDivergesOnADifferentAnswer(t *testing.T) {
	r, obs, _ := replayRetrier(t, "{1205:3,0}")
	f := newFakeTx(3)
	f.answers[1].Add("changed")
	orig := serverError{1205}
	err := r.Replay(context.Background(), f.replay("UPDATE t SET v = 0"), orig)
	require.ErrorIs(t, err, core.ErrReplayDiverged)
	var se serverError
	require.ErrorAs(t, err, &se, "the original error keeps its type")
	assert.Equal(t, []int{0, 1}, f.resent, "the replay stops at the first difference")
	assert.Zero(t, f.retries, "the failed statement never ran again")
	ev := obs.Snapshot()
	require.Len(t, ev.GiveUps, 1)
	assert.ErrorIs(t, ev.GiveUps[0].Reason, core.ErrReplayDiverged)
	assert.Equal(t, "diverged", ev.GiveUps[0].Detail)
	assert.True(t, ev.GiveUps[0].Replay)
}

func TestReplayDivergesWhenAResentStatementFails(t *testing.T) {
	r, _, _ := replayRetrier(t, "{1205:3,0}")
	f := newFakeTx(2)
	f.resendErr[0] = serverError{2627} // a duplicate key where the caller saw success
	err := r.Replay(context.Background(), f.replay("UPDATE t SET v = 0"), serverError{1205})
	require.ErrorIs(t, err, core.ErrReplayDiverged)
	assert.Zero(t, f.retries)
}

func TestReplayAgainOnAnotherDeadlockUntilTheCountRunsOut(t *testing.T) {
	r, obs, _ := replayRetrier(t, "{1205:2,0}")
	f := newFakeTx(1)
	f.retryErrs = []error{serverError{1205}, serverError{1205}}
	err := r.Replay(context.Background(), f.replay("UPDATE t SET v = 0"), serverError{1205})
	require.ErrorIs(t, err, core.ErrRetriesExhausted)
	require.ErrorIs(t, err, core.ErrReplayDiverged)
	var se serverError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 2, f.rollbacks)
	ev := obs.Snapshot()
	assert.Len(t, ev.Retries, 2)
	require.Len(t, ev.GiveUps, 1)
	assert.ErrorIs(t, ev.GiveUps[0].Reason, core.ErrRetriesExhausted)
}

func TestReplayReturnsTheFailedStatementsOwnAnswer(t *testing.T) {
	r, _, _ := replayRetrier(t, "{1205:3,0}")
	f := newFakeTx(1)
	dup := serverError{2627}
	f.retryErrs = []error{dup}
	err := r.Replay(context.Background(), f.replay("INSERT INTO t VALUES (1)"), serverError{1205})
	assert.Equal(t, error(dup), err, "the statement's new answer, as it is")
}

func TestReplayNotRunForErrorsThatDidNotEndTheTransaction(t *testing.T) {
	r, obs, _ := replayRetrier(t, "{2627,1205:3,0}")
	f := newFakeTx(1)
	orig := serverError{2627}
	err := r.Replay(context.Background(), f.replay("INSERT INTO t VALUES (1)"), orig)
	assert.Equal(t, error(orig), err)
	assert.Zero(t, f.rollbacks)
	assert.Empty(t, obs.Snapshot().GiveUps)
}

func TestReplayNotRunWithoutARule(t *testing.T) {
	r, obs, _ := replayRetrier(t, "{1222:3,0}")
	f := newFakeTx(1)
	orig := serverError{1205}
	err := r.Replay(context.Background(), f.replay("UPDATE t SET v = 0"), orig)
	assert.Equal(t, error(orig), err)
	assert.Zero(t, f.rollbacks)
	assert.Empty(t, obs.Snapshot().GiveUps)
}

func TestReplayFilterCheckedAgainstTheFailedStatement(t *testing.T) {
	r, _, _ := replayRetrier(t, "{1205:3,0:select}")
	f := newFakeTx(1)
	orig := serverError{1205}
	assert.Equal(t, error(orig), r.Replay(context.Background(), f.replay("UPDATE t SET v = 0"), orig))
	assert.Zero(t, f.rollbacks)
	require.NoError(t, r.Replay(context.Background(), f.replay("SELECT v FROM t"), orig))
	assert.Equal(t, 1, f.rollbacks)
}

func TestReplaySkippedStops(t *testing.T) {
	for _, tc := range []struct {
		name, detail string
		setup        func(f *fakeTx)
		query        string
	}{
		{"rows open", "rows_open", func(f *fakeTx) { f.rec.RowsOpened() }, "UPDATE t SET v = 0"},
		{"limit", "limit", func(f *fakeTx) { f.rec.Reset(1); f.rec.Add("SELECT 1", 0); f.rec.Add("SELECT 2", 0) }, "UPDATE t SET v = 0"},
		{"batch recorded", "batch", func(f *fakeTx) { f.rec.Add("UPDATE a SET v = 1; UPDATE b SET v = 1", 0) }, "UPDATE t SET v = 0"},
		{"procedure recorded", "batch", func(f *fakeTx) { f.rec.Add("EXEC dbo.Transfer", 0) }, "UPDATE t SET v = 0"},
		{"failed batch", "batch", func(*fakeTx) {}, "CALL transfer(1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, obs, _ := replayRetrier(t, "{1205:3,0}")
			f := newFakeTx(1)
			tc.setup(f)
			orig := serverError{1205}
			err := r.Replay(context.Background(), f.replay(tc.query), orig)
			assert.Equal(t, error(orig), err, "no replay ran: the original error as it is")
			assert.Zero(t, f.rollbacks)
			ev := obs.Snapshot()
			require.Len(t, ev.GiveUps, 1)
			assert.Equal(t, tc.detail, ev.GiveUps[0].Detail)
			assert.True(t, ev.GiveUps[0].Replay)
		})
	}
}

func TestReplayNotRunAfterAResultSetItCannotReadAgain(t *testing.T) {
	r, obs, _ := replayRetrier(t, "{1205:3,0}")
	f := newFakeTx(2)
	f.rec.Saw(1, math.MinInt64, f.answers[1]) // the caller moved to the query's second result set
	orig := serverError{1205}
	err := r.Replay(context.Background(), f.replay("UPDATE t SET v = 0"), orig)
	assert.Equal(t, error(orig), err, "the original error, unchanged")
	assert.Zero(t, f.rollbacks, "no replay ran")
	ev := obs.Snapshot()
	require.Len(t, ev.GiveUps, 1)
	assert.Equal(t, "batch", ev.GiveUps[0].Detail)
}

func TestReplayStopsWhenTheConnectionBroke(t *testing.T) {
	r, obs, _ := replayRetrier(t, "{1205:3,0}")
	f := newFakeTx(1)
	f.rollbackEr = errors.New("broken pipe")
	err := r.Replay(context.Background(), f.replay("UPDATE t SET v = 0"), serverError{1205})
	require.ErrorIs(t, err, core.ErrReplayDiverged)
	assert.Zero(t, f.begins)
	assert.Equal(t, "broken", obs.Snapshot().GiveUps[0].Detail)
}

func TestReplayRefusedByTheBudgetAndTheBreaker(t *testing.T) {
	budget, err := core.NewBudget(core.BudgetSettings{Max: 2, ContentionCost: 1, ContentionPerSuccess: 1, OverloadCost: 1})
	require.NoError(t, err)
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:3,0}")}, core.Options{Budget: budget})
	for i := 0; i < 10; i++ {
		f := newFakeTx(1)
		f.retryErrs = []error{serverError{1205}, serverError{1205}, serverError{1205}}
		err = r.Replay(context.Background(), f.replay("UPDATE t SET v = 0"), serverError{1205})
		if f.rollbacks == 0 {
			break
		}
	}
	require.ErrorIs(t, err, core.ErrRetryBudgetExceeded)
	assert.NotErrorIs(t, err, core.ErrReplayDiverged, "no replay ran")
	var se serverError
	require.ErrorAs(t, err, &se)

	breaker, err := core.NewBreaker(core.BreakerSettings{Failures: 1}, nil)
	require.NoError(t, err)
	r, _ = newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:1,0}")}, core.Options{Breaker: breaker})
	f := newFakeTx(1)
	f.retryErrs = []error{serverError{1205}}
	_ = r.Replay(context.Background(), f.replay("UPDATE t SET v = 0"), serverError{1205})
	require.True(t, breaker.Open())
	f = newFakeTx(1)
	orig := serverError{1205}
	assert.Equal(t, error(orig), r.Replay(context.Background(), f.replay("UPDATE t SET v = 0"), orig))
	assert.Zero(t, f.rollbacks, "an open breaker: no replay")
}

func TestReplayDivergenceIsNoFailureOfTheDatabase(t *testing.T) {
	breaker, err := core.NewBreaker(core.BreakerSettings{Failures: 1}, nil)
	require.NoError(t, err)
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:3,0}")}, core.Options{Breaker: breaker})
	for i := 0; i < 5; i++ {
		f := newFakeTx(2)
		f.answers[1].Add("changed by another session")
		err = r.Replay(context.Background(), f.replay("UPDATE t SET v = 0"), serverError{1205})
		require.ErrorIs(t, err, core.ErrReplayDiverged)
	}
	assert.False(t, breaker.Open(), "answers that differ are the database working: the breaker stays closed")

	f := newFakeTx(1)
	f.rollbackEr = errors.New("broken pipe")
	_ = r.Replay(context.Background(), f.replay("UPDATE t SET v = 0"), serverError{1205})
	assert.True(t, breaker.Open(), "a connection that broke during the replay is a failure")
}

func TestReplayPostgresEveryErrorEndsTheTransaction(t *testing.T) {
	r, _, _ := replayRetrier(t, "{40001,55P03:3,0}")
	f := newFakeTx(1)
	require.NoError(t, r.Replay(context.Background(), f.replay("UPDATE t SET v = 0"), &pgError{"55P03"}))
	assert.Equal(t, 1, f.rollbacks)
	require.NoError(t, r.Replay(context.Background(), f.replay("COMMIT"), &pgError{"40001"}))
	assert.Equal(t, 2, f.rollbacks)
	// A unique violation no rule retries is the caller's, unreplayed.
	orig := &pgError{"23505"}
	assert.Equal(t, error(orig), r.Replay(context.Background(), f.replay("INSERT INTO t VALUES (1)"), orig))
}

func TestReplayStatementOnlyErrorRunsTheStatementAlone(t *testing.T) {
	r, obs, _ := replayRetrier(t, "{1222:3,0}")
	f := newFakeTx(2)
	f.live = true
	f.retryErrs = []error{serverError{1222}}
	require.NoError(t, r.Replay(context.Background(), f.replay("UPDATE t SET v = 0"), serverError{1222}))
	assert.Zero(t, f.rollbacks, "the transaction is live: nothing rolled back")
	assert.Equal(t, 2, f.retries)
	ev := obs.Snapshot()
	require.Len(t, ev.Retries, 2)
	assert.Equal(t, core.KindStatement, ev.Retries[0].Kind)
	// XACT_ABORT on: the transaction was rolled back whole, so it is replayed.
	f.live, f.retries = false, 0
	require.NoError(t, r.Replay(context.Background(), f.replay("UPDATE t SET v = 0"), serverError{1222}))
	assert.Equal(t, 1, f.rollbacks)
	assert.Equal(t, []int{0, 1}, f.resent)
}

func TestReplayHonoursNoRetry(t *testing.T) {
	type key struct{}
	obs := &coretest.Observer{}
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:3,0}")}, core.Options{Observer: obs,
		NoRetry: func(ctx context.Context) bool { return ctx.Value(key{}) != nil }})
	f := newFakeTx(1)
	orig := serverError{1205}
	ctx := context.WithValue(context.Background(), key{}, true)
	assert.Equal(t, error(orig), r.Replay(ctx, f.replay("UPDATE t SET v = 0"), orig))
	assert.Zero(t, f.rollbacks)
	assert.Empty(t, obs.Snapshot().GiveUps)
}

func TestReplayAtCommitOnlyForErrorsThatSayItRolledBack(t *testing.T) {
	r, _, _ := replayRetrier(t, "{40001,57P01:3,0}")
	f := newFakeTx(1)
	orig := &pgError{"57P01"} // administrator shutdown: the COMMIT's outcome is unknown
	assert.Equal(t, error(orig), r.Replay(context.Background(), f.replay("COMMIT"), orig))
	assert.Zero(t, f.rollbacks)
	require.NoError(t, r.Replay(context.Background(), f.replay("UPDATE t SET v = 1"), orig))
	assert.Equal(t, 1, f.rollbacks)
}

// The zero value records with the default limit; Reset's limit, or the
// default for one ≤ 0, is how many statements are recorded.
func TestTxRecordZeroValueAndDefaultLimit(t *testing.T) {
	var zero core.TxRecord
	i, args := zero.Add("SELECT ?", 1)
	assert.Equal(t, 0, i)
	assert.Len(t, args, 1)
	var rec core.TxRecord
	rec.Reset(0)
	for n := range 1000 {
		i, _ := rec.Add("SELECT 1", 0)
		require.Equal(t, n, i)
	}
	i, _ = rec.Add("SELECT 1", 0)
	assert.Equal(t, -1, i, "the default limit is 1000")
	assert.Equal(t, 1000, rec.Len())
}
