package main

import (
	"bytes"
	"context"
	"database/sql/driver"
	"strings"
	"testing"

	"github.com/XSAM/otelsql"
	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

// Through the name otelsql registers, with WithDriverFamily: crl's DSN key
// is read and stripped (the driver would reject it), the deadlock is
// retried (2 executions), and the driver's span of each attempt — the
// first with the deadlock as its error — is a child of the caller's span,
// which carries crl's retry event and its success.
func TestRetriedUnderTheDriversSpans(t *testing.T) {
	srv := mssqltest.NewServer(t)
	srv.Handle(reserve, mssqltest.Error(1205), mssqltest.Affected(1))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	db, obs, err := openTraced(tp, srv.DSN()+"&retryExec={1205:1,0}")
	require.NoError(t, err)
	defer obs.Close()
	defer db.Close()
	assert.Equal(t, "SELECT @p1", db.Rebind("SELECT ?"), "binds as SQL Server")

	ctx, caller := tp.Tracer("shop").Start(context.Background(), "reserve")
	_, err = db.ExecContext(ctx, reserve)
	caller.End()
	require.NoError(t, err)
	assert.Equal(t, 2, srv.Count(reserve), "the deadlock was retried")

	parent, execs := spanAndExecs(spans.Ended(), "reserve")
	require.NotNil(t, parent)
	var events []string
	for _, e := range parent.Events() {
		events = append(events, e.Name)
	}
	assert.Equal(t, []string{"crl.retry", "crl.succeeded"}, events, "crl's events on the caller's span")
	require.Len(t, execs, 2, "one driver span per attempt: %v", names(spans.Ended()))
	for _, s := range execs {
		assert.Equal(t, parent.SpanContext().SpanID(), s.Parent().SpanID(), "%s nests under the caller's span", s.Name())
		assert.Equal(t, parent.SpanContext().TraceID(), s.SpanContext().TraceID())
	}
	assert.Equal(t, "Error", execs[0].Status().Code.String(), "the first attempt's span has the deadlock")
	assert.Contains(t, exceptionMessages(execs[0]), "deadlock", "otelsql records the driver's error")
	assert.Equal(t, "Unset", execs[1].Status().Code.String(), "the retry succeeded")
}

// A connector wrapped by otelsql (WrapDriver, then the wrapped driver's
// OpenConnector) through sqlxcrl.OpenDB under a wrapped name: the login
// that fails transiently is retried by the login loop (2 logins) and the
// deadlock by the statement rule.
func TestWrappedConnector(t *testing.T) {
	srv := mssqltest.NewServer(t)
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	wrapped := otelsql.WrapDriver(&mssql.Driver{}, otelsql.WithTracerProvider(tp))
	c, err := wrapped.(driver.DriverContext).OpenConnector(srv.DSN())
	require.NoError(t, err)
	db, err := sqlxcrl.OpenDB(c, "sqlserver-otel", config.WithDriverFamily("sqlserver"), sqlxcrl.WithRetryExec("{1205:1,0}"))
	require.NoError(t, err)
	defer db.Close()

	srv.FailLogin(40613, 1)
	require.NoError(t, db.Ping())
	assert.Equal(t, 2, srv.Logins(), "logins: the JDBC algorithm's")
	srv.Handle(reserve, mssqltest.Error(1205), mssqltest.Affected(1))
	_, err = db.Exec(reserve)
	require.NoError(t, err)
	assert.Equal(t, 2, srv.Count(reserve))
	assert.NotEmpty(t, spans.Ended(), "the driver's spans were recorded")
}

// The example's own output.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out))
	assert.Contains(t, out.String(), "reserve\n  event crl.retry\n  event crl.succeeded\n", "the tree:\n%s", out.String())
	assert.Contains(t, out.String(), "  sql.stmt.exec (error: ", "the deadlocked attempt's span, under the caller's:\n%s", out.String())
}

// exceptionMessages joins the messages of a span's exception events.
func exceptionMessages(s sdktrace.ReadOnlySpan) string {
	var msgs []string
	for _, e := range s.Events() {
		for _, a := range e.Attributes {
			if a.Key == "exception.message" {
				msgs = append(msgs, a.Value.AsString())
			}
		}
	}
	return strings.Join(msgs, "; ")
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

// Without a caller's span, crl opens a span of its own at the first retry
// (crl.retry statement) and gives the retried attempts its context
// (core.Observer's RetryContext): the driver's span of the retry nests under it,
// and the first attempt's, which ran before it existed, is a root.
func TestRetryNestsUnderCrlsSpan(t *testing.T) {
	srv := mssqltest.NewServer(t)
	srv.Handle(reserve, mssqltest.Error(1205), mssqltest.Affected(1))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	db, obs, err := openTraced(tp, srv.DSN()+"&retryExec={1205:1,0}")
	require.NoError(t, err)
	defer obs.Close()
	defer db.Close()

	_, err = db.ExecContext(context.Background(), reserve)
	require.NoError(t, err)
	assert.Equal(t, 2, srv.Count(reserve), "the deadlock was retried")

	retry, execs := spanAndExecs(spans.Ended(), "crl.retry statement")
	require.NotNil(t, retry, "crl's span: %v", names(spans.Ended()))
	require.Len(t, execs, 2, "one driver span per attempt: %v", names(spans.Ended()))
	assert.False(t, execs[0].Parent().IsValid(), "the first attempt ran before crl's span existed")
	assert.Equal(t, retry.SpanContext().SpanID(), execs[1].Parent().SpanID(), "the retried attempt's span nests under crl's retry span")
	assert.Equal(t, retry.SpanContext().TraceID(), execs[1].SpanContext().TraceID())
}

// spanAndExecs returns the span named name and the driver's spans of
// executions, in the order they ended.
func spanAndExecs(ended []sdktrace.ReadOnlySpan, name string) (sdktrace.ReadOnlySpan, []sdktrace.ReadOnlySpan) {
	var span sdktrace.ReadOnlySpan
	var execs []sdktrace.ReadOnlySpan
	for _, s := range ended {
		switch {
		case s.Name() == name:
			span = s
		case strings.Contains(s.Name(), "exec"):
			execs = append(execs, s)
		}
	}
	return span, execs
}
