package hooks

import (
	"context"
	"errors"
	"log/slog"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

// Slog returns an observer that logs the events with logger (nil means
// slog.Default()): a scheduled retry of any kind (statement, transaction or
// connection, the kind attribute says which) at Info, a success after
// retries at Info, giving up at Warn, a COMMIT of unknown
// outcome (core.ErrCommitUnknown: the transaction may or may not have been
// applied, and was not retried) at Error with reason=commit_unknown, a
// failed reload of the properties file at Error, one that changed a key
// read only at start (config.ErrRestartRequired) at Warn, and a successful
// one at Info. Every record of one operation has the same op attribute (the
// event's Op), and is logged with the operation's context, so a handler
// can add the caller's trace IDs. A record of a unit that crl re-runs
// (crl.RunInTx, crl.Retry, the adapters' helpers), or of an operation run
// inside one of its runs, has unit_attempt: crl.Attempt of its context.
// Statement texts are logged as they were run, so keep values in
// parameters, not in the SQL.
func Slog(logger *slog.Logger) core.Observer {
	if logger == nil {
		logger = slog.Default()
	}
	return slogObserver{l: logger}
}

// slogObserver logs the events; it reads Elapsed (it has NopObserver's
// OperationEnded, see core.Observer) and ignores Operation and
// OperationEnded.
type slogObserver struct {
	core.NopObserver
	l *slog.Logger
}

// orBackground is ctx, or context.Background() for an event built by hand.
func orBackground(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}

func (s slogObserver) RetryScheduled(e core.RetryScheduled) {
	ctx := orBackground(e.Context)
	s.l.LogAttrs(ctx, slog.LevelInfo, "crl: retry scheduled", withUnitAttempt(ctx, slog.Uint64("op", e.Op),
		slog.String("kind", e.Kind.String()), slog.String("query", e.Query), slog.Int("attempt", e.Attempt),
		slog.Duration("wait", e.Wait), slog.Duration("elapsed", e.Elapsed), slog.String("token", e.Token), slog.Any("error", e.Err))...)
}

func (s slogObserver) GaveUp(e core.GaveUp) {
	level, msg := slog.LevelWarn, "crl: gave up"
	if errors.Is(e.Reason, core.ErrCommitUnknown) {
		level, msg = slog.LevelError, "crl: COMMIT outcome unknown; the transaction was not retried and may or may not have been applied"
	}
	ctx := orBackground(e.Context)
	s.l.LogAttrs(ctx, level, msg, withUnitAttempt(ctx, slog.Uint64("op", e.Op),
		slog.String("kind", e.Kind.String()), slog.String("query", e.Query), slog.Int("attempts", e.Attempts),
		slog.String("reason", Reason(e.Reason)), slog.Any("error", e.Err))...)
}

func (s slogObserver) Succeeded(e core.Succeeded) {
	ctx := orBackground(e.Context)
	s.l.LogAttrs(ctx, slog.LevelInfo, "crl: succeeded after retries", withUnitAttempt(ctx, slog.Uint64("op", e.Op),
		slog.String("kind", e.Kind.String()), slog.String("query", e.Query), slog.Int("attempts", e.Attempts),
		slog.Duration("elapsed", e.Elapsed))...)
}

// withUnitAttempt returns attrs with unit_attempt, the run of the unit
// that crl re-runs whose context the event carries (crl.Attempt: 1, 2,
// …), when there is one: the lines of a transaction helper's or
// crl.Retry's loop, and of the operations run inside one of its runs (a
// connection opened for it, an adapter's statement loop).
func withUnitAttempt(ctx context.Context, attrs ...slog.Attr) []slog.Attr {
	if n := crl.Attempt(ctx); n > 0 {
		attrs = append(attrs, slog.Int("unit_attempt", n))
	}
	return attrs
}

func (s slogObserver) RulesReloaded(e core.RulesReloaded) {
	if errors.Is(e.Err, config.ErrForeignPool) {
		// A handle over a pool crl did not open (told once, when built):
		// not a file's event, and not a failure of anything that runs.
		s.l.LogAttrs(context.Background(), slog.LevelWarn, "crl: a handle over a pool crl did not open; nothing on it is retried",
			slog.Any("error", e.Err))
		return
	}
	if errors.Is(e.Err, config.ErrRestartRequired) {
		// The file was applied, but for a key read only at start: the
		// operator's edit does nothing until a restart.
		s.l.LogAttrs(context.Background(), slog.LevelWarn, "crl: properties file reloaded, but a key read only at start changed; restart to apply it",
			slog.String("path", e.Path), slog.Any("error", e.Err))
		return
	}
	if e.Err != nil {
		attrs := []slog.Attr{slog.String("path", e.Path), slog.Any("error", e.Err)}
		if e.Line > 0 { // a deleted or unreadable file has no line
			attrs = append(attrs, slog.Int("line", e.Line))
		}
		s.l.LogAttrs(context.Background(), slog.LevelError, "crl: properties file not applied; the last good rules stay", attrs...)
		return
	}
	s.l.LogAttrs(context.Background(), slog.LevelInfo, "crl: properties file reloaded", slog.String("path", e.Path))
}
