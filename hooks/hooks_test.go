package hooks_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/hooks"
)

func TestMulti(t *testing.T) {
	if hooks.Multi() != nil || hooks.Multi(nil, nil) != nil {
		t.Fatal("Multi of nothing must be nil")
	}
	a, b := &coretest.Observer{}, &coretest.Observer{}
	if hooks.Multi(a) != core.Observer(a) {
		t.Error("Multi of one observer is that observer")
	}
	m := hooks.Multi(a, nil, hooks.Multi(b))
	m.RetryScheduled(core.RetryScheduled{Attempt: 1})
	m.GaveUp(core.GaveUp{})
	m.Succeeded(core.Succeeded{})
	m.ConnectionRetry(core.ConnectionRetry{})
	m.RulesReloaded(core.RulesReloaded{})
	for _, o := range []*coretest.Observer{a, b} {
		s := o.Snapshot()
		if len(s.Retries) != 1 || len(s.GiveUps) != 1 || len(s.Successes) != 1 || len(s.Conns) != 1 || len(s.Reloads) != 1 {
			t.Errorf("events = %+v", s)
		}
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
		errors.New("x"):              "other",
	} {
		if got := hooks.Reason(err); got != want {
			t.Errorf("Reason(%v) = %q, want %q", err, got, want)
		}
	}
}

func TestSlog(t *testing.T) {
	var buf bytes.Buffer
	o := hooks.Slog(slog.New(slog.NewTextHandler(&buf, nil)))
	o.RetryScheduled(core.RetryScheduled{Query: "select 1", Attempt: 1, Wait: 2 * time.Second, Token: "1205", Err: errors.New("deadlock")})
	o.GaveUp(core.GaveUp{Attempts: 4, Reason: core.ErrRetryBudgetExceeded, Err: errors.New("deadlock")})
	o.RulesReloaded(core.RulesReloaded{Path: "/etc/crl/mssql-jdbc.properties", Line: 3, Err: errors.New("bad")})
	out := buf.String()
	for _, want := range []string{"retry scheduled", "token=1205", "wait=2s", "level=WARN", "reason=budget", "level=ERROR", "line=3"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

// TestSlogDeletedFileHasNoLine: a deleted or unreadable properties file is
// logged without "line=0" (issue 14, item 7).
func TestSlogDeletedFileHasNoLine(t *testing.T) {
	var buf bytes.Buffer
	o := hooks.Slog(slog.New(slog.NewTextHandler(&buf, nil)))
	o.RulesReloaded(core.RulesReloaded{Path: "/etc/crl/mssql-jdbc.properties", Err: errors.New("the properties file was deleted")})
	if out := buf.String(); strings.Contains(out, "line=") || !strings.Contains(out, "deleted") {
		t.Errorf("log of a deleted file:\n%s", out)
	}
}
