package core_test

import (
	"context"
	"database/sql/driver"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
)

// A negative error number is no number a rule can name: it must not reach
// the table where the named conditions live (timeout, badconn).
func TestNegativeNumberMatchesNoCondition(t *testing.T) {
	rules := mustRules(t, "{timeout,badconn:2,0}")
	for _, n := range []int32{-1, -2, -3, -1 << 31} {
		_, ok := rules.Lookup(n)
		assert.False(t, ok, "Lookup(%d)", n)
	}
	conn, err := core.ParseConnectionRules("{timeout,badconn}")
	require.NoError(t, err)
	assert.False(t, conn.Retryable(-1))
	assert.False(t, conn.Retryable(-2))

	// Through the statement loop: a driver error numbered -1 or -2 is not
	// a time-out nor a broken connection.
	r, _ := newRetrier(t, core.Policy{Statement: rules}, core.Options{})
	for _, n := range []int32{-1, -2} {
		calls := 0
		err := r.Do(context.Background(), "select 1", failing(&calls, serverError{n}))
		assert.Equal(t, serverError{n}, err)
		assert.Equal(t, 1, calls, "error %d was retried", n)
	}
}

// A batch that writes, and a procedure call whose rule does not name it,
// are not retried on their own: part of them may have committed.
func TestBatchesAndProceduresNotRetriedAlone(t *testing.T) {
	cases := []struct {
		rules, query string
		retried      bool
	}{
		{"{1205:2,0}", "UPDATE a SET n = n + 1; UPDATE b SET n = n + 1", false},
		{"{1205:2,0:update}", "UPDATE a SET n = n + 1; UPDATE b SET n = n + 1", false},
		{"{1205:2,0}", "SET NOCOUNT ON; SELECT * FROM t", true},
		{"{1205:2,0}", "UPDATE a SET s = 'x; y'", true},
		{"{1205:2,0}", "EXEC dbo.Transfer 1, 2", false},
		{"{1205:2,0:select,update}", "EXEC dbo.Transfer 1, 2", false}, // a filter mismatch: unchanged
		{"{1205:2,0:exec}", "EXEC dbo.Transfer 1, 2", true},
		{"{1205:2,0:call}", "CALL transfer(1, 2)", true},
		{"{1205:2,0}", "dbo.Transfer", false},
	}
	for _, tc := range cases {
		t.Run(tc.query+" "+tc.rules, func(t *testing.T) {
			var gave []core.GaveUp
			r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, tc.rules)}, core.Options{Observer: gaveUpRecorder{gave: &gave}})
			calls := 0
			err := r.Do(context.Background(), tc.query, failing(&calls, serverError{1205}))
			if tc.retried {
				require.NoError(t, err)
				assert.Equal(t, 2, calls)
				return
			}
			assert.Equal(t, 1, calls)
			assert.ErrorIs(t, err, serverError{1205})
			if tc.rules == "{1205:2,0:select,update}" {
				assert.Equal(t, serverError{1205}, err)
				return
			}
			require.ErrorIs(t, err, core.ErrBatchNotRetried)
			assert.Contains(t, err.Error(), "RunInTx")
			require.Len(t, gave, 1)
			assert.Equal(t, core.ErrBatchNotRetried, gave[0].Reason)
		})
	}
	// A whole transaction is rolled back as a whole: its failed statement
	// may be a batch, and it is retried.
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:2,0}")}, core.Options{})
	runs := 0
	err := r.DoTx(context.Background(), func(context.Context) (string, error) {
		if runs++; runs == 1 {
			return "UPDATE a SET n = 1; UPDATE b SET n = 1", serverError{1205}
		}
		return "", nil
	})
	require.NoError(t, err)
	assert.Equal(t, 2, runs)
}

type gaveUpRecorder struct {
	core.NopObserver
	gave *[]core.GaveUp
}

func (g gaveUpRecorder) GaveUp(e core.GaveUp) { *g.gave = append(*g.gave, e) }

// A COMMIT of unknown outcome is never retried, and never silent: it emits
// a GaveUp event with its own reason, so that logs and metrics show it.
func TestCommitUnknownEmitsGaveUp(t *testing.T) {
	var gave []core.GaveUp
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{badconn:3,0}")}, core.Options{Observer: gaveUpRecorder{gave: &gave}})
	unknown := fmt.Errorf("sqlxcrl: COMMIT failed: %w: %w", core.ErrCommitUnknown, driver.ErrBadConn)
	runs := 0
	err := r.DoTx(context.Background(), func(context.Context) (string, error) { runs++; return "", unknown })
	require.ErrorIs(t, err, core.ErrCommitUnknown)
	assert.Equal(t, 1, runs)
	require.Len(t, gave, 1)
	assert.Equal(t, core.ErrCommitUnknown, gave[0].Reason)
	assert.Equal(t, core.KindTransaction, gave[0].Kind)
	assert.Equal(t, 1, gave[0].Attempts)
	assert.ErrorIs(t, gave[0].Err, driver.ErrBadConn)
}
