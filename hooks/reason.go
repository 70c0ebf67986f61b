package hooks

import (
	"errors"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

// Reason names why a loop gave up, for logs and metric labels:
// exhausted, query_timeout, budget, deadline, not_retryable,
// login_timeout, circuit_open, batch, commit_unknown, or other. Reasons
// lists them.
func Reason(err error) string {
	switch {
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
		"login_timeout", "circuit_open", "batch", "commit_unknown", "other"}
}

// ReloadResult names how a reload of the properties file ended, for
// metric labels: ok (the new rules took effect), restart_required (they
// did, but a key read only at start changed too:
// config.ErrRestartRequired) or error (the file no longer parses, or is
// gone: the last good rules stay). ReloadResults lists them.
func ReloadResult(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, config.ErrRestartRequired):
		return "restart_required"
	}
	return "error"
}

// ReloadResults returns every name ReloadResult can return.
func ReloadResults() []string { return []string{"ok", "error", "restart_required"} }
