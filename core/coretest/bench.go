package coretest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
)

// ObserverCase names an Observer for BenchmarkSuccessObserved; a nil
// Observer is a Retrier without one.
type ObserverCase struct {
	Name     string
	Observer core.Observer
}

// BenchmarkSuccessObserved runs the statement loop's success path (a first
// attempt that succeeds, under realistic rules) once per case, in
// parallel, as a sub-benchmark named after the case: what an observer adds
// to every operation. core and the hooks modules run it with their own
// observers.
func BenchmarkSuccessObserved(b *testing.B, cases ...ObserverCase) {
	rules, err := core.ParseStatementRules("{1205,1222:3,2*2:select,update}")
	require.NoError(b, err)
	ctx := context.Background()
	stmt := func(context.Context) error { return nil }
	for _, c := range cases {
		r, err := core.NewRetrier(core.Policy{Statement: rules}, core.Options{Observer: c.Observer})
		require.NoError(b, err, c.Name)
		b.Run(c.Name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var err error
				for pb.Next() {
					err = r.Do(ctx, "select 1", stmt)
				}
				assert.NoError(b, err, c.Name) // not require: this is one of RunParallel's goroutines
			})
		})
	}
}
