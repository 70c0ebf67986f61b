package core_test

import (
	"context"
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
