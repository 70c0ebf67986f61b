package core

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzOneScanner: the first keyword the query filter sees is the first
// keyword the batch guard sees, on every input, and neither panics.
func FuzzOneScanner(f *testing.F) {
	for _, q := range []string{
		"select 1", "\uFEFFEXEC dbo.Transfer 1, 2", "/* a /* b */ c */ update t", "-- x\nselect", "((select 1))",
		";;delete from t", "'x' select", "[select] = 1", "$$ a $$ insert", "\uFEFF\uFEFF  insert", "select\uFEFFx",
		"`q` update", "e\\'x", "SELECT 1; UPDATE t SET n = 1",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		kw := FirstKeyword(q)
		require.Equal(t, kw, scanBatch(q, false).keyword, "%q: the first keyword the batch guard sees (expected: the filter's)", q)
		scanBatch(q, true)
	})
}

// A byte order mark before a procedure call does not hide it from the
// batch guard: under a rule without a filter it is refused exactly as the
// plain text is, and the query filter sees its keyword.
func TestByteOrderMarkBeforeAProcedureCall(t *testing.T) {
	rules, err := ParseStatementRules("{1205:3,0}")
	require.NoError(t, err)
	filtered, err := ParseStatementRules("{1205:3,0:exec}")
	require.NoError(t, err)
	for _, q := range []string{"EXEC dbo.Transfer 1, 2", "\uFEFFEXEC dbo.Transfer 1, 2", "\uFEFF /* c */ exec dbo.Transfer 1, 2"} {
		r, err := NewRetrier(Policy{Statement: rules}, Options{})
		require.NoError(t, err)
		runs := 0
		err = r.Do(context.Background(), q, func(context.Context) error { runs++; return testNumbered(1205) })
		assert.ErrorIs(t, err, ErrBatchNotRetried, "%q", q)
		assert.Equal(t, 1, runs, "%q ran more than once", q)

		rule, ok := filtered.Lookup(1205)
		require.True(t, ok)
		assert.True(t, rule.Matches(q), "%q: the filter sees exec", q)
	}
}

type testNumbered int32

func (e testNumbered) Error() string         { return "mssql: error" }
func (e testNumbered) SQLErrorNumber() int32 { return int32(e) }
