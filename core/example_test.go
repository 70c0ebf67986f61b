package core_test

import (
	"context"
	"fmt"

	"github.com/crl-go/crl/core"
)

func ExampleParseStatementRules() {
	rules, err := core.ParseStatementRules("{1205,1222:3,2*2:select,update}")
	if err != nil {
		panic(err)
	}
	r, _ := rules.Lookup(1205)
	fmt.Println(r.WaitTimes())
	fmt.Println(r.Matches("UPDATE t SET a = 1"), r.Matches("DELETE FROM t"))
	// Output:
	// [2s 4s 8s]
	// true false
}

func ExampleParseStatementRules_error() {
	_, err := core.ParseStatementRules("{1205:3,2AND2}")
	fmt.Println(err)
	// Output:
	// core: rule "{1205:3,2AND2}": "2AND2" is not a number, expected seconds such as 2 or a time with a unit such as 100ms, 1.5s or 2m
}

func ExampleConnectionRules_Retryable() {
	appended, _ := core.ParseConnectionRules("{+18456}")
	replaced, _ := core.ParseConnectionRules("{18456}")
	fmt.Println(appended.Retryable(18456), appended.Retryable(40613))
	fmt.Println(replaced.Retryable(18456), replaced.Retryable(40613))
	// Output:
	// true true
	// true false
}

// requestCounter is a metrics hook in miniature: it counts operations and
// retries, and does not time them: it has no OperationEnded (it does not
// embed core.NopObserver, which has one).
type requestCounter struct{ ops, retries int }

func (c *requestCounter) Operation(core.Kind)                { c.ops++ }
func (c *requestCounter) RetryScheduled(core.RetryScheduled) { c.retries++ }
func (c *requestCounter) RetryContext(ctx context.Context, _ core.RetryScheduled) context.Context {
	return ctx
}
func (c *requestCounter) GaveUp(core.GaveUp)               {}
func (c *requestCounter) Succeeded(core.Succeeded)         {}
func (c *requestCounter) RulesReloaded(core.RulesReloaded) {}
func (c *requestCounter) ratio() float64                   { return float64(c.retries) / float64(c.ops) }
func (c *requestCounter) String() string {
	return fmt.Sprintf("%d operations, %d retries", c.ops, c.retries)
}

// deadlockVictim is SQL Server's error 1205.
type deadlockVictim struct{}

func (deadlockVictim) Error() string         { return "deadlock victim" }
func (deadlockVictim) SQLErrorNumber() int32 { return 1205 }

// statementFailingOnce is a statement that is a deadlock victim once,
// then succeeds.
func statementFailingOnce() func(context.Context) error {
	n := 0
	return func(context.Context) error {
		n++
		if n == 1 {
			return deadlockVictim{}
		}
		return nil
	}
}

// An observer that counts operations (Operation) and does not read the
// time of operations (it has no OperationEnded) adds one call to the
// success path: no clock is read for it: a counter of requests needs no more (a hook
// that also times operations, as hooks/prometheus's duration histogram
// does, reads the clock).
func ExampleObserver() {
	rules, _ := core.ParseStatementRules("{1205:3,0}")
	counter := &requestCounter{}
	r, err := core.NewRetrier(core.Policy{Statement: rules}, core.Options{Observer: counter})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for range 3 {
		_ = r.Do(ctx, "UPDATE t SET a = 1", func(context.Context) error { return nil })
	}
	_ = r.Do(ctx, "UPDATE t SET a = 1", statementFailingOnce())
	fmt.Println(counter)
	fmt.Printf("retry ratio %.2f\n", counter.ratio())
	// Output:
	// 4 operations, 1 retries
	// retry ratio 0.25
}
