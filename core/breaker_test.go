package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
)

func TestBreaker(t *testing.T) {
	clock := coretest.NewClock(time.Time{})
	breaker := core.NewBreaker(core.BreakerSettings{Failures: 3, OpenFor: 10 * time.Second}, clock)
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:1,0}")}, core.Options{Clock: clock, Breaker: breaker, NoBudget: true}) // the breaker alone
	ctx := context.Background()
	executions := 0
	deadlock := func(context.Context) error { executions++; return serverError{1205} }
	ok := func(context.Context) error { executions++; return nil }

	// Two failed operations, then a success: the count starts again.
	_ = r.Do(ctx, "x", deadlock)
	_ = r.Do(ctx, "x", deadlock)
	if err := r.Do(ctx, "x", ok); err != nil || breaker.Open() {
		t.Fatalf("err %v open %v", err, breaker.Open())
	}
	// A constraint violation means the database answered: not a failure.
	_ = r.Do(ctx, "x", func(context.Context) error { return serverError{2627} })
	// Three failed operations in a row open it.
	for i := 0; i < 3; i++ {
		_ = r.Do(ctx, "x", deadlock)
	}
	if !breaker.Open() {
		t.Fatal("breaker not open after 3 failures in a row")
	}
	executions = 0
	err := r.Do(ctx, "x", ok)
	if !errors.Is(err, core.ErrCircuitOpen) || !errors.Is(err, serverError{1205}) || executions != 0 {
		t.Fatalf("open breaker: err %v, %d executions", err, executions)
	}
	// After OpenFor one probe runs; its failure reopens the breaker.
	clock.Advance(10 * time.Second)
	_ = r.Do(ctx, "x", deadlock)
	if executions != 2 || !breaker.Open() {
		t.Fatalf("probe: %d executions, open %v", executions, breaker.Open())
	}
	if err := r.Do(ctx, "x", ok); !errors.Is(err, core.ErrCircuitOpen) {
		t.Fatalf("reopened breaker let an operation through: %v", err)
	}
	// A successful probe closes it.
	clock.Advance(10 * time.Second)
	if err := r.Do(ctx, "x", ok); err != nil || breaker.Open() {
		t.Fatalf("successful probe: err %v open %v", err, breaker.Open())
	}
}

func TestBreakerOffAndValidate(t *testing.T) {
	if core.NewBreaker(core.BreakerSettings{}, nil) != nil {
		t.Error("zero settings must give no breaker")
	}
	var b *core.Breaker
	if b.Open() {
		t.Error("a nil breaker is closed")
	}
	if err := (core.BreakerSettings{Failures: -1}).Validate(); err == nil {
		t.Error("negative failures accepted")
	}
}

func TestBreakerSuccessAllocatesNothing(t *testing.T) {
	r, _ := newRetrier(t, core.Policy{Statement: mustRules(t, "{1205:1,0}")}, core.Options{Breaker: core.NewBreaker(core.BreakerSettings{Failures: 5}, nil)})
	ctx := context.Background()
	if a := testing.AllocsPerRun(1000, func() { _ = r.Do(ctx, "x", func(context.Context) error { return nil }) }); a != 0 {
		t.Errorf("%v allocations", a)
	}
}
