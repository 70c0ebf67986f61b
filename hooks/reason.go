package hooks

import (
	"errors"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

// Reason names why a loop gave up, for logs and metric labels:
// exhausted, query_timeout, budget, deadline, not_retryable,
// login_timeout, circuit_open, batch, commit_unknown, diverged (a
// transaction replay that stopped), or other. Reasons lists them.
func Reason(err error) string {
	switch {
	case errors.Is(err, core.ErrReplayDiverged):
		return "diverged"
	case errors.Is(err, core.ErrRetriesExhausted):
		return "exhausted"
	case errors.Is(err, core.ErrInvalidRetryInterval):
		return "query_timeout"
	case errors.Is(err, core.ErrRetryBudgetExceeded):
		return "budget"
	case errors.Is(err, core.ErrDeadline):
		return "deadline"
	case errors.Is(err, core.ErrNotRetryable):
		return "not_retryable"
	case errors.Is(err, core.ErrLoginTimeout):
		return "login_timeout"
	case errors.Is(err, core.ErrCircuitOpen):
		return "circuit_open"
	case errors.Is(err, core.ErrBatchNotRetried):
		return "batch"
	case errors.Is(err, core.ErrCommitUnknown):
		return "commit_unknown"
	}
	return "other"
}

// Reasons returns every name Reason can return, for metrics that create
// their labelled series up front.
func Reasons() []string {
	return []string{"exhausted", "query_timeout", "budget", "deadline", "not_retryable",
		"login_timeout", "circuit_open", "batch", "commit_unknown", "diverged", "other"}
}

// ReplayOutcome names how a transaction replay of the driver layer ended,
// from its event, for metric labels (ReplayOutcomes lists them):
// replayed (the replay was equal and the failed statement ran again),
// diverged (an answer came back different, or the connection broke),
// gave_up (the rules said no more: retries used up, the budget, the
// deadline, the breaker) or skipped (no replay could run: rows open,
// txReplayLimit passed, a batch or procedure call recorded), with the
// reason: the stop code for diverged and skipped (GaveUp.Detail), the
// loop's Reason for gave_up, "" for replayed. ok is false for an event
// that is no replay's.
func ReplayOutcome(replay bool, reason error, detail string) (outcome, why string, ok bool) {
	switch {
	case !replay:
		return "", "", false
	case reason == nil || detail == "answer":
		return "replayed", "", true
	case errors.Is(reason, core.ErrReplayDiverged):
		return "diverged", detail, true
	case errors.Is(reason, core.ErrNotRetryable) && detail != "":
		return "skipped", detail, true
	}
	return "gave_up", Reason(reason), true
}

// ReplayOutcomes returns every outcome ReplayOutcome can return, with the
// reasons each comes with, for metrics that create their series up front.
func ReplayOutcomes() map[string][]string {
	return map[string][]string{
		"replayed": {""},
		"diverged": {"diverged", "broken"},
		"skipped":  {"rows_open", "limit", "batch"},
		"gave_up":  {"exhausted", "budget", "deadline", "circuit_open"},
	}
}

// ReloadResult names how a reload of the properties file ended, for
// metric labels: ok (the new rules took effect), restart_required (they
// did, but a key read only at start changed too:
// config.ErrRestartRequired) or error (the file no longer parses, or is
// gone: the last good rules stay); and not_retried for the event an
// adapter emits once per handle built over a pool crl did not open
// (config.ErrForeignPool: no file, nothing on that pool is retried).
// ReloadResults lists them.
func ReloadResult(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, config.ErrRestartRequired):
		return "restart_required"
	case errors.Is(err, config.ErrForeignPool):
		return "not_retried"
	}
	return "error"
}

// ReloadResults returns every name ReloadResult can return.
func ReloadResults() []string { return []string{"ok", "error", "restart_required", "not_retried"} }
