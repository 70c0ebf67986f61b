package hooks_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/hooks"
)

func TestMulti(t *testing.T) {
	// == nil, not require.Nil: a nil pointer in the interface is not nil.
	require.True(t, hooks.Multi() == nil, "Multi of nothing must be nil")
	require.True(t, hooks.Multi(nil, nil) == nil, "Multi of nils must be nil")
	a, b := &coretest.Observer{}, &coretest.Observer{}
	assert.Same(t, a, hooks.Multi(a), "Multi of one observer is that observer")
	m := hooks.Multi(a, nil, hooks.Multi(b))
	m.RetryScheduled(core.RetryScheduled{Attempt: 1})
	m.GaveUp(core.GaveUp{})
	m.Succeeded(core.Succeeded{})
	m.RulesReloaded(core.RulesReloaded{})
	for _, o := range []*coretest.Observer{a, b} {
		s := o.Snapshot()
		assert.Len(t, s.Retries, 1, "events = %+v", s)
		assert.Len(t, s.GiveUps, 1, "events = %+v", s)
		assert.Len(t, s.Successes, 1, "events = %+v", s)
		assert.Len(t, s.Reloads, 1, "events = %+v", s)
	}
}

func TestReason(t *testing.T) {
	for err, want := range map[error]string{
		&core.RetryError{Reason: core.ErrRetriesExhausted, Err: errors.New("x")}: "exhausted",
		core.ErrInvalidRetryInterval: "query_timeout",
		core.ErrRetryBudgetExceeded:  "budget",
		core.ErrDeadline:             "deadline",
		core.ErrNotRetryable:         "not_retryable",
		core.ErrLoginTimeout:         "login_timeout",
		core.ErrCircuitOpen:          "circuit_open",
		core.ErrCommitUnknown:        "commit_unknown",
		core.ErrBatchNotRetried:      "batch",
		errors.New("x"):              "other",
	} {
		assert.Equal(t, want, hooks.Reason(err), "Reason(%v)", err)
	}
}

func TestReloadResult(t *testing.T) {
	restart := fmt.Errorf("config: retryBudget changed: %w", config.ErrRestartRequired)
	assert.Equal(t, "ok", hooks.ReloadResult(nil))
	assert.Equal(t, "restart_required", hooks.ReloadResult(restart))
	assert.Equal(t, "error", hooks.ReloadResult(errors.New("config: line 3: bad rule")))
	assert.Equal(t, "not_retried", hooks.ReloadResult(fmt.Errorf("sqlxcrl: the pool: %w", config.ErrForeignPool)))
	assert.ElementsMatch(t, []string{"ok", "error", "restart_required", "not_retried"}, hooks.ReloadResults())
}

func TestSlog(t *testing.T) {
	var buf bytes.Buffer
	o := hooks.Slog(slog.New(slog.NewTextHandler(&buf, nil)))
	o.RetryScheduled(core.RetryScheduled{Query: "select 1", Attempt: 1, Wait: 2 * time.Second, Token: "1205", Err: errors.New("deadlock")})
	o.GaveUp(core.GaveUp{Attempts: 4, Reason: core.ErrRetryBudgetExceeded, Err: errors.New("deadlock")})
	o.RulesReloaded(core.RulesReloaded{Path: "/etc/crl/mssql-jdbc.properties", Line: 3, Err: errors.New("bad")})
	out := buf.String()
	for _, want := range []string{"retry scheduled", "token=1205", "wait=2s", "level=WARN", "reason=budget", "level=ERROR", "line=3"} {
		assert.Contains(t, out, want, "log lacks %q", want)
	}
}

// TestSlogDeletedFileHasNoLine: a deleted or unreadable properties file is
// logged without "line=0" (issue 14, item 7).
func TestSlogDeletedFileHasNoLine(t *testing.T) {
	var buf bytes.Buffer
	o := hooks.Slog(slog.New(slog.NewTextHandler(&buf, nil)))
	o.RulesReloaded(core.RulesReloaded{Path: "/etc/crl/mssql-jdbc.properties", Err: errors.New("the properties file was deleted")})
	out := buf.String()
	assert.NotContains(t, out, "line=", "log of a deleted file")
	assert.Contains(t, out, "deleted", "log of a deleted file")
}

// The event of a handle built over a pool crl did not open is a warning
// that says so, not a properties file that did not apply.
func TestSlogForeignPool(t *testing.T) {
	var buf bytes.Buffer
	o := hooks.Slog(slog.New(slog.NewTextHandler(&buf, nil)))
	o.RulesReloaded(core.RulesReloaded{Err: fmt.Errorf("sqlxcrl: the pool: %w", config.ErrForeignPool)})
	out := buf.String()
	assert.Contains(t, out, "level=WARN")
	assert.Contains(t, out, "nothing on it is retried")
	assert.Contains(t, out, "crl.OpenDB")
	assert.NotContains(t, out, "properties file", "not a file's event")
}

type opCounter struct {
	core.NopObserver
	n [3]int
}

func (o *opCounter) Operation(k core.Kind) { o.n[k]++ }

func TestMultiOperation(t *testing.T) {
	a, b := &opCounter{}, &opCounter{}
	plain := &coretest.Observer{}
	m := hooks.Multi(a, plain, hooks.Multi(b, plain))
	m.Operation(core.KindTransaction)
	assert.Equal(t, [3]int{0, 1, 0}, a.n, "Multi counts operations when a member does")
	assert.Equal(t, [3]int{0, 1, 0}, b.n)
	assert.NotPanics(t, func() { hooks.Multi(plain, &coretest.Observer{}).Operation(core.KindStatement) },
		"no member counts operations: NopObserver's Operation does nothing")
	assert.Same(t, a, hooks.Multi(nil, a), "one observer is returned as it is, Operation kept")
}

func TestSlogCommitUnknownIsAnError(t *testing.T) {
	var buf bytes.Buffer
	o := hooks.Slog(slog.New(slog.NewTextHandler(&buf, nil)))
	reason := fmt.Errorf("wrapped: %w", core.ErrCommitUnknown)
	o.GaveUp(core.GaveUp{Context: context.Background(), Op: 42, Kind: core.KindTransaction,
		Query: "COMMIT", Attempts: 1, Reason: reason, Err: errors.New("read tcp: connection reset by peer")})
	out := buf.String()
	assert.Contains(t, out, "level=ERROR")
	assert.Contains(t, out, "reason=commit_unknown")
	assert.Contains(t, out, "COMMIT outcome unknown")
	assert.Contains(t, out, "op=42")
	assert.Contains(t, out, "kind=transaction")

	buf.Reset()
	o.GaveUp(core.GaveUp{Kind: core.KindTransaction, Attempts: 4, Reason: core.ErrRetriesExhausted, Err: errors.New("deadlock")})
	assert.Contains(t, buf.String(), "level=WARN", "other give-ups stay warnings")
	assert.Equal(t, "commit_unknown", hooks.Reason(reason))
	assert.Contains(t, hooks.Reasons(), hooks.Reason(reason))
}

// The records of an operation are logged with its context, so a handler
// can read the caller's values (trace IDs).
func TestSlogUsesTheEventContext(t *testing.T) {
	h := &ctxHandler{}
	o := hooks.Slog(slog.New(h))
	ctx := context.WithValue(context.Background(), ctxKey{}, "trace-1")
	o.RetryScheduled(core.RetryScheduled{Context: ctx, Attempt: 1})
	o.GaveUp(core.GaveUp{Context: ctx, Reason: core.ErrRetriesExhausted})
	o.Succeeded(core.Succeeded{Context: ctx, Attempts: 2})
	o.RetryScheduled(core.RetryScheduled{Context: ctx, Kind: core.KindConnection, Attempt: 1})
	assert.Equal(t, []any{"trace-1", "trace-1", "trace-1", "trace-1"}, h.seen)
}

type ctxKey struct{}

type ctxHandler struct{ seen []any }

func (h *ctxHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *ctxHandler) Handle(ctx context.Context, _ slog.Record) error {
	h.seen = append(h.seen, ctx.Value(ctxKey{}))
	return nil
}
func (h *ctxHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *ctxHandler) WithGroup(string) slog.Handler      { return h }

// untimedCounter counts operations and has no OperationEnded: it does
// not read the time of operations.
type untimedCounter struct{ n [3]int }

func (o *untimedCounter) Operation(k core.Kind)            { o.n[k]++ }
func (*untimedCounter) RetryScheduled(core.RetryScheduled) {}
func (*untimedCounter) RetryContext(ctx context.Context, _ core.RetryScheduled) context.Context {
	return ctx
}
func (*untimedCounter) GaveUp(core.GaveUp)               {}
func (*untimedCounter) Succeeded(core.Succeeded)         {}
func (*untimedCounter) RulesReloaded(core.RulesReloaded) {}

// endsOf returns o's OperationEnded, and whether it has one.
func endsOf(o core.Observer) (interface{ OperationEnded(core.OperationEnded) }, bool) {
	e, ok := o.(interface{ OperationEnded(core.OperationEnded) })
	return e, ok
}

// TestMultiOperationEndedOnlyWhenAMemberHasIt: Multi reads no clock only
// when no member reads Elapsed (a member that embeds NopObserver does).
func TestMultiOperationEndedOnlyWhenAMemberHasIt(t *testing.T) {
	wants := func(o core.Observer) bool { _, ok := endsOf(o); return ok }
	a, b := &untimedCounter{}, &untimedCounter{}
	assert.False(t, wants(hooks.Multi(a, b)), "members that only count")
	assert.True(t, wants(hooks.Multi(a, &coretest.Observer{})), "a member that reads Elapsed")
	assert.True(t, wants(hooks.Multi(a, hooks.Slog(nil))), "the slog hook logs elapsed")
	assert.True(t, wants(hooks.Multi(&coretest.Observer{}, &coretest.Observer{})))
	assert.True(t, wants(hooks.Multi(hooks.Multi(a, &coretest.Observer{}), b)), "a Multi member that has it")
}
