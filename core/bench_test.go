package core_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
)

func BenchmarkParseStatementRules(b *testing.B) {
	b.ReportAllocs()
	for range b.N {
		if _, err := core.ParseStatementRules("{1205,1222:3,2*2:select,update};{40501:5,10+5};{40613:3,1s*2}"); err != nil {
			require.NoError(b, err) // under the if: require's b.Helper() is not measured
		}
	}
}

// BenchmarkDecision is the error path's decision: look the number up and
// check the query filter.
func BenchmarkDecision(b *testing.B) {
	rules, err := core.ParseStatementRules("{1205,1222:3,2*2:select,update};{40501:5,10+5}")
	require.NoError(b, err)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r, ok := rules.Lookup(1205)
			if !ok || !r.Matches("  /* hint */ SELECT * FROM t") {
				assert.Fail(b, "no match") // require must not be called from RunParallel's goroutines
				return
			}
		}
	})
}

var sink error

// BenchmarkDoSuccess is the success path through the statement loop,
// compared with calling the statement directly; both must allocate nothing.
func BenchmarkDoSuccess(b *testing.B) {
	rules, err := core.ParseStatementRules("{1205,1222:3,2*2:select,update}")
	require.NoError(b, err)
	r, err := core.NewRetrier(core.Policy{Statement: rules}, core.Options{})
	require.NoError(b, err)
	ctx := context.Background()
	stmt := func(context.Context) error { return nil }
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				sink = stmt(ctx)
			}
		})
	})
	b.Run("retrier", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				sink = r.Do(ctx, "select 1", stmt)
			}
		})
	})
}

func TestDoSuccessAllocatesNothing(t *testing.T) {
	rules, err := core.ParseStatementRules("{1205:3,2*2}")
	require.NoError(t, err)
	r, err := core.NewRetrier(core.Policy{Statement: rules}, core.Options{})
	require.NoError(t, err)
	ctx := context.Background()
	n := 7
	allocs := testing.AllocsPerRun(1000, func() {
		_ = r.Do(ctx, "select 1", func(context.Context) error { n++; return nil })
		_, _ = runValue(ctx, r, core.Op{Query: "select 1"}, func(context.Context) (int, error) { return n, nil })
		_, _ = runValue(ctx, r, core.Op{Query: "select 1", Rows: true}, func(context.Context) (int, error) { return n, nil })
	})
	assert.Zero(t, allocs, "allocations per run of the success path")
}
