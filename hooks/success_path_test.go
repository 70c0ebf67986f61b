package hooks_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/hooks"
)

// opCount counts operations (core.Observer's Operation), as the metrics
// hooks do, with no library behind it.
type opCount struct {
	core.NopObserver
	n int
}

func (o *opCount) Operation(core.Kind) { o.n++ }

// BenchmarkDoSuccess is the statement loop's success path with the hooks
// of this package off (no observer) and on: Slog (which logs nothing for a
// first attempt that succeeds) and Multi around Slog and an operation
// counter. The hooks modules (prometheus, otel) have the same benchmark
// with their observers.
func BenchmarkDoSuccess(b *testing.B) {
	logger := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	coretest.BenchmarkSuccessObserved(b,
		coretest.ObserverCase{Name: "hook-off"},
		coretest.ObserverCase{Name: "slog-on", Observer: hooks.Slog(logger)},
		coretest.ObserverCase{Name: "multi-on", Observer: hooks.Multi(hooks.Slog(logger), &opCount{})})
}

// On the success path the slog hook writes nothing and allocates nothing,
// alone or in Multi; Multi still counts every operation.
func TestDoSuccessWithSlogAllocatesNothing(t *testing.T) {
	var logged bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logged, nil))
	ctx := context.Background()
	ops := &opCount{}
	for name, obs := range map[string]core.Observer{
		"slog":  hooks.Slog(logger),
		"multi": hooks.Multi(hooks.Slog(logger), ops),
	} {
		r, err := core.NewRetrier(core.Policy{}, core.Options{Observer: obs})
		require.NoError(t, err)
		allocs := testing.AllocsPerRun(1000, func() {
			_ = r.Do(ctx, "select 1", func(context.Context) error { return nil })
		})
		assert.Zero(t, allocs, name)
	}
	assert.Empty(t, logged.String(), "a first attempt that succeeds is not logged")
	assert.Equal(t, 1001, ops.n, "Multi passes every operation on")
}
