package benchmarks

import (
	"context"
	"errors"
	"testing"
	

	retrygo "github.com/avast/retry-go/v4"
	backoff "github.com/cenkalti/backoff/v4"

	"github.com/crl-go/crl/core"
)

type deadlock struct{}

func (deadlock) Error() string         { return "deadlock victim" }
func (deadlock) SQLErrorNumber() int32 { return 1205 }

var errDeadlock error = deadlock{}

var sink error

// BenchmarkSuccessPath is one statement that succeeds at once, run
// directly and through each retry library with an equivalent policy (3
// retries for the deadlock error). The difference to "direct" is what a
// retry layer costs when nothing fails.
func BenchmarkSuccessPath(b *testing.B) {
	ctx := context.Background()
	stmt := func() error { return nil }
	rules, err := core.ParseStatementRules("{1205,1222:3,2*2:select,update}")
	if err != nil {
		b.Fatal(err)
	}
	r, err := core.NewRetrier(core.Policy{Statement: rules}, core.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = stmt()
		}
	})
	b.Run("crl", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = r.Do(ctx, "select 1", func(context.Context) error { return stmt() })
		}
	})
	b.Run("cenkalti-backoff", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			policy := backoff.WithMaxRetries(backoff.NewExponentialBackOff(), 3)
			sink = backoff.Retry(func() error {
				err := stmt()
				var n interface{ SQLErrorNumber() int32 }
				if err != nil && !(errors.As(err, &n) && n.SQLErrorNumber() == 1205) {
					return backoff.Permanent(err)
				}
				return err
			}, backoff.WithContext(policy, ctx))
		}
	})
	b.Run("retry-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = retrygo.Do(stmt, retrygo.Attempts(4), retrygo.Context(ctx), retrygo.RetryIf(func(err error) bool {
				var n interface{ SQLErrorNumber() int32 }
				return errors.As(err, &n) && n.SQLErrorNumber() == 1205
			}))
		}
	})
}

// BenchmarkDecision is the cost of deciding on an error: classify it, find
// the rule, check the filter.
func BenchmarkDecision(b *testing.B) {
	rules, _ := core.ParseStatementRules("{1205,1222:3,2*2:select,update};{40501:5,10+5}")
	b.ReportAllocs()
	for b.Loop() {
		n, _ := core.ErrorNumber(errDeadlock)
		rule, ok := rules.Lookup(n)
		if !ok || !rule.Matches("/* hint */ SELECT 1") {
			b.Fatal("no match")
		}
	}
}
