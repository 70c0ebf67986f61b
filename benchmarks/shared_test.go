package benchmarks

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

// TestDriverLayerWritesNothingShared holds what BenchmarkDriverLayerParallel
// is for, where two shared vCPUs cannot time it (docs/benchmarks.md): a
// statement that succeeds writes nothing its pool's connections share
// (the Retrier, its policies, the retry budget, the circuit breaker, the
// pool's Runtime, and everything they reach), so connections running on
// every P never contend for a cache line of crl's. Every statement kind
// of the benchmarks and a transaction run on the pools of the benchmark
// (crl, crl-rules), on one with a breaker and a budget of its own and on
// one with a properties file (each operation asks whether it is due),
// while another goroutine reads that memory with plain loads: under the
// race detector (.ci/run) a write there, an atomic one included, is a
// data race and fails the test; without it, the memory is compared
// before and after. A pool whose observer counts each operation (one
// atomic add: hooks/prometheus's cost) does write, and the comparison
// sees it.
func TestDriverLayerWritesNothingShared(t *testing.T) {
	breaker := core.BreakerSettings{Failures: 5, OpenFor: 1e9}
	props := filepath.Join(t.TempDir(), "mssql-jdbc.properties")
	require.NoError(t, os.WriteFile(props, []byte("retryExec="+rules+"\n"), 0o600))
	for _, p := range append(layerPools(t)[1:3],
		layerPool{"crl-breaker", openLayer(t, config.WithRetryExec(rules), config.WithCircuitBreaker(breaker), config.WithRetryBudget(core.BudgetSettings{}))},
		layerPool{"crl-properties", openLayer(t, config.WithPropertiesFile(props))}, // looked at again in 30 s: every statement asks
	) {
		t.Run(p.name, func(t *testing.T) {
			run := layerWorkload(t, p.db)
			run() // the texts, memos and prepared statements of a first run are the connection's
			mem := sharedMemory(t, p.db)
			before := mem.snapshot()
			var stop atomic.Bool
			var wg sync.WaitGroup
			wg.Go(func() {
				for !stop.Load() {
					mem.snapshot() // plain loads: a write of the statements races with them
				}
			})
			for range 200 {
				run()
			}
			stop.Store(true)
			wg.Wait()
			require.True(t, bytes.Equal(before, mem.snapshot()), "a success wrote memory the pool's connections share")
		})
	}
	t.Run("counted", func(t *testing.T) {
		db := openLayer(t, config.WithObserver(&countingObserver{}))
		run := layerWorkload(t, db)
		run()
		mem := sharedMemory(t, db)
		before := mem.snapshot()
		run()
		require.False(t, bytes.Equal(before, mem.snapshot()), "the observer's count is shared memory the test reads")
	})
}

// openLayer opens crl's driver layer over the in-memory connector.
func openLayer(tb testing.TB, opts ...crl.Option) *sql.DB {
	tb.Helper()
	db, err := crl.OpenDB(memConnector{}, "crlmem", opts...)
	require.NoError(tb, err)
	tb.Cleanup(func() { db.Close() })
	return db
}

// layerWorkload returns a function that runs each of layerStatements once
// and layerTx, failing tb on an error.
func layerWorkload(tb testing.TB, db *sql.DB) func() {
	ctx := context.Background()
	var runs []func(context.Context) error
	for _, st := range layerStatements {
		runs = append(runs, st.prepare(tb, db))
	}
	runs = append(runs, func(ctx context.Context) error { return layerTx(ctx, db, true) })
	return func() {
		for _, run := range runs {
			if err := run(ctx); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// countingObserver counts operations, as hooks/prometheus does (it has
// no OperationEnded: it does not time them); it observes nothing else.
type countingObserver struct{ ops atomic.Int64 }

func (o *countingObserver) Operation(core.Kind)              { o.ops.Add(1) }
func (*countingObserver) RetryScheduled(core.RetryScheduled) {}
func (*countingObserver) GaveUp(core.GaveUp)                 {}
func (*countingObserver) Succeeded(core.Succeeded)           {}
func (*countingObserver) RulesReloaded(core.RulesReloaded)   {}
func (*countingObserver) RetryContext(ctx context.Context, _ core.RetryScheduled) context.Context {
	return ctx
}

// memory is the memory of a set of objects: the bytes of each.
type memory []region

// region is one object: its address and size.
type region struct {
	p unsafe.Pointer
	n uintptr
}

// snapshot copies every region, with plain loads (copy: the race
// detector sees each byte read).
func (m memory) snapshot() []byte {
	var out []byte
	for _, r := range m {
		out = append(out, unsafe.Slice((*byte)(r.p), r.n)...)
	}
	return out
}

// sharedMemory returns the memory reachable from the pool's Runtime
// (crl.RuntimeOf): each object it reaches through pointers, interfaces,
// slices, maps and sync/atomic's Pointer, once. Functions' closures and
// channels are not followed.
func sharedMemory(tb testing.TB, db *sql.DB) memory {
	tb.Helper()
	rt, ok := crl.RuntimeOf(db)
	require.True(tb, ok)
	w := walker{seen: map[unsafe.Pointer]bool{}}
	w.pointer(reflect.ValueOf(rt))
	require.NotEmpty(tb, w.mem)
	return w.mem
}

// walker collects the memory reachable from a value.
type walker struct {
	seen map[unsafe.Pointer]bool
	mem  memory
}

// pointer collects what the pointer v points to, and what that reaches.
func (w *walker) pointer(v reflect.Value) {
	p := v.UnsafePointer()
	t := v.Type().Elem()
	if p == nil || w.seen[p] || t.Size() == 0 {
		return
	}
	w.seen[p] = true
	w.mem = append(w.mem, region{p, t.Size()})
	w.value(reflect.NewAt(t, p).Elem())
}

// value collects what the addressable value v reaches.
func (w *walker) value(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		w.pointer(v)
	case reflect.Struct:
		w.fields(v)
	case reflect.Array:
		for i := range v.Len() {
			w.value(v.Index(i))
		}
	case reflect.Slice:
		if v.Cap() > 0 && !w.seen[v.UnsafePointer()] {
			w.seen[v.UnsafePointer()] = true
			w.mem = append(w.mem, region{v.UnsafePointer(), uintptr(v.Cap()) * v.Type().Elem().Size()})
			for i := range v.Len() {
				w.value(v.Index(i))
			}
		}
	case reflect.Interface:
		if !v.IsNil() {
			e := v.Elem()
			c := reflect.New(e.Type()).Elem() // an interface's value, copied: what it points to is what counts
			c.Set(e)
			w.value(c)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			k.Set(it.Key())
			e.Set(it.Value())
			w.value(k)
			w.value(e)
		}
	}
}

// fields collects what the fields of the addressable struct v reach,
// unexported ones included; the pointer of a sync/atomic Pointer[T] is
// followed as a *T.
func (w *walker) fields(v reflect.Value) {
	t := v.Type()
	if t.PkgPath() == "sync/atomic" && strings.HasPrefix(t.Name(), "Pointer[") {
		target := t.Field(0).Type.Elem() // Pointer[T]'s first field is [0]*T
		p := unsafe.Pointer(v.UnsafeAddr())
		w.pointer(reflect.NewAt(target, p).Elem()) // its one word is the pointer
		return
	}
	for i := range v.NumField() {
		f := v.Field(i)
		w.value(reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem())
	}
}
