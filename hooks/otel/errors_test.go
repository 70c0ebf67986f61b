package otel_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/crl-go/crl/core"
	crlotel "github.com/crl-go/crl/hooks/otel"
)

// errorTypes are the values error.type may take: a status code (an error
// number, a SQLSTATE) or one of the documented names. A Go type name
// (*pgconn.PgError) or a message matches none.
var errorTypes = regexp.MustCompile(`^([0-9]+|[0-9A-Z]{5}|timeout|canceled|badconn|circuit_open|panic|_OTHER)$`)

// statusCodes is the shape of db.response.status_code for each
// db.system.name: SQLSTATE for PostgreSQL, the error number for MySQL,
// MariaDB and SQL Server.
var statusCodes = map[string]*regexp.Regexp{
	"postgresql":           regexp.MustCompile(`^[0-9A-Z]{5}$`),
	"mysql":                regexp.MustCompile(`^[0-9]+$`),
	"mariadb":              regexp.MustCompile(`^[0-9]+$`),
	"microsoft.sql_server": regexp.MustCompile(`^[0-9]+$`),
}

// checkErrorAttributes checks one set of attributes against the
// conventions: error.type from the bounded set, equal to
// db.response.status_code when that is set, which has its system's shape.
func checkErrorAttributes(t *testing.T, where string, a map[attribute.Key]attribute.Value) {
	t.Helper()
	et, ok := a["error.type"]
	if !ok {
		assert.NotContains(t, a, attribute.Key("db.response.status_code"), "%s: a status code without error.type", where)
		return
	}
	assert.Regexp(t, errorTypes, et.AsString(), "%s: error.type", where)
	sc, ok := a["db.response.status_code"]
	if !ok {
		return
	}
	assert.Equal(t, sc.AsString(), et.AsString(), "%s: error.type is the status code", where)
	if re, ok := statusCodes[a["db.system.name"].AsString()]; ok {
		assert.Regexp(t, re, sc.AsString(), "%s: db.response.status_code of %s", where, a["db.system.name"].AsString())
	}
}

// checkConventions checks every span, span event and measurement of s.
func checkConventions(t *testing.T, s *setup) {
	t.Helper()
	for _, sp := range s.spans.Ended() {
		checkErrorAttributes(t, "span "+sp.Name(), attrs(sp.Attributes()))
		for _, ev := range sp.Events() {
			if ev.Name != "exception" {
				checkErrorAttributes(t, "event "+ev.Name, attrs(ev.Attributes))
			}
		}
	}
	for name, dps := range measurements(t, s) {
		for _, a := range dps {
			checkErrorAttributes(t, "metric "+name, a)
		}
	}
}

// measurements are the attribute sets of every data point of the
// histogram and the two synchronous counters, by instrument.
func measurements(t *testing.T, s *setup) map[string][]map[attribute.Key]attribute.Value {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, s.reader.Collect(context.Background(), &rm))
	out := map[string][]map[attribute.Key]attribute.Value{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					out[m.Name] = append(out[m.Name], attrs(dp.Attributes.ToSlice()))
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					out[m.Name] = append(out[m.Name], attrs(dp.Attributes.ToSlice()))
				}
			}
		}
	}
	return out
}

// badState has a SQLState method that returns no SQLSTATE.
type badState struct{}

func (badState) Error() string    { return "not a SQLSTATE" }
func (badState) SQLState() string { return "oops!" }

// The attributes of a give-up for each kind of error, on the give-up's
// span and on crl.give_ups: the status code the database sent (the
// SQLSTATE for PostgreSQL, the error number for MySQL and SQL Server),
// and an error.type from a bounded set, never the Go type.
func TestErrorTypeAndStatusCodeOfEachError(t *testing.T) {
	netErr := func(errno syscall.Errno) error {
		return &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", errno)}
	}
	deadlockPG := &pgconn.PgError{Severity: "ERROR", Code: "40P01", Message: "deadlock detected"}
	cases := []struct {
		name        string
		err         error
		status, typ string // status "" means no db.response.status_code
	}{
		{"postgresql deadlock", deadlockPG, "40P01", "40P01"},
		{"postgresql, wrapped", fmt.Errorf("update orders: %w", &pgconn.PgError{Code: "40001"}), "40001", "40001"},
		{"postgresql, in a RetryError", &core.RetryError{Attempts: 2, Reason: core.ErrRetriesExhausted, Err: deadlockPG}, "40P01", "40P01"},
		{"postgresql cancel", &pgconn.PgError{Code: "57014"}, "57014", "57014"},
		{"mysql deadlock: the number, not the SQLSTATE", &mysql.MySQLError{Number: 1213, SQLState: [5]byte{'4', '0', '0', '0', '1'}}, "1213", "1213"},
		{"sql server deadlock", mssql.Error{Number: 1205, Class: 13}, "1205", "1205"},
		{"sql server, wrapped", fmt.Errorf("exec: %w", mssql.Error{Number: 40613}), "40613", "40613"},
		{"connection reset", netErr(syscall.ECONNRESET), "", "badconn"},
		{"connection refused", netErr(syscall.ECONNREFUSED), "", "10061"},
		{"socket time-out", netErr(syscall.ETIMEDOUT), "", "timeout"},
		{"context deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), "", "timeout"},
		{"context cancelled", context.Canceled, "", "canceled"},
		{"end of stream", io.ErrUnexpectedEOF, "", "badconn"},
		{"not a SQLSTATE", badState{}, "", "_OTHER"},
		{"unknown", errors.New("boom"), "", "_OTHER"},
		{"none", nil, "", "_OTHER"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSetup(t, crlotel.Options{Driver: "pgx"})
			s.obs.GaveUp(core.GaveUp{Context: context.Background(), Op: 1, Kind: core.KindStatement,
				Attempts: 1, Reason: core.ErrRetriesExhausted, Err: c.err})
			require.Len(t, s.spans.Ended(), 1)
			for where, a := range map[string]map[attribute.Key]attribute.Value{
				"span":         attrs(s.spans.Ended()[0].Attributes()),
				"crl.give_ups": measurements(t, s)["crl.give_ups"][0],
			} {
				assert.Equal(t, c.typ, a["error.type"].AsString(), "%s: error.type", where)
				status, ok := a["db.response.status_code"]
				assert.Equal(t, c.status != "", ok, "%s: db.response.status_code present", where)
				assert.Equal(t, c.status, status.AsString(), "%s: db.response.status_code", where)
			}
		})
	}
}

// A retry's error.type is the token of the rule that fired when the error
// carries no status code: what the rule saw. The status code wins when
// there is one.
func TestARetrysErrorTypeIsItsTokenWithoutAStatusCode(t *testing.T) {
	s := newSetup(t, crlotel.Options{})
	ctx := context.Background()
	s.obs.RetryScheduled(core.RetryScheduled{Context: ctx, Op: 1, Attempt: 1, Token: "timeout", Err: errors.New("driver: canceled by the attempt's time limit")})
	s.obs.RetryScheduled(core.RetryScheduled{Context: ctx, Op: 2, Attempt: 1, Token: "40P01", Err: &pgconn.PgError{Code: "40P01"}})
	s.obs.OperationEnded(core.OperationEnded{Context: ctx, Op: 1})
	s.obs.OperationEnded(core.OperationEnded{Context: ctx, Op: 2})
	got := map[string]string{}
	for _, a := range measurements(t, s)["crl.retries"] {
		got[a["crl.retry.token"].AsString()] = a["error.type"].AsString() + " " + a["db.response.status_code"].Emit()
	}
	assert.Equal(t, map[string]string{"timeout": "timeout ", "40P01": "40P01 40P01"}, got)
	checkConventions(t, s)
}

// An operation the circuit breaker refuses ran nothing: its error carries
// the earlier operation's deadlock, but the refused operation got no
// status code from the database, and its error.type is circuit_open.
func TestACircuitOpenRefusalHasNoStatusCode(t *testing.T) {
	s := newSetup(t, crlotel.Options{Driver: "sqlserver"})
	breaker, err := core.NewBreaker(core.BreakerSettings{Failures: 1, OpenFor: time.Minute}, s.clock)
	require.NoError(t, err)
	rules, err := core.ParseStatementRules("{1205:1,0}")
	require.NoError(t, err)
	r, err := core.NewRetrier(core.Policy{Statement: rules}, core.Options{Observer: s.obs, Clock: s.clock, Breaker: breaker})
	require.NoError(t, err)
	ctx := context.Background()
	require.Error(t, r.Do(ctx, "update t", failing(5)), "exhausted: the breaker opens")
	err = r.Do(ctx, "update t", failing(5))
	require.ErrorIs(t, err, core.ErrCircuitOpen)

	ended := s.spans.Ended()
	require.Len(t, ended, 2)
	exhausted, refused := attrs(ended[0].Attributes()), attrs(ended[1].Attributes())
	assert.Equal(t, "exhausted", exhausted["crl.give_up.reason"].AsString())
	assert.Equal(t, "1205", exhausted["db.response.status_code"].AsString())
	assert.Equal(t, "1205", exhausted["error.type"].AsString())
	assert.Equal(t, "circuit_open", refused["crl.give_up.reason"].AsString())
	assert.NotContains(t, refused, attribute.Key("db.response.status_code"))
	assert.Equal(t, "circuit_open", refused["error.type"].AsString())
	assert.Equal(t, codes.Error, ended[1].Status().Code)
	checkConventions(t, s)
}

// A panic's span and measurement say panic, whatever error came before.
func TestPanicsErrorTypeFollowsTheConventions(t *testing.T) {
	s := newSetup(t, crlotel.Options{Driver: "sqlserver"})
	tx := 0
	assert.Panics(t, func() {
		_ = s.retrier.DoTx(context.Background(), func(context.Context) (string, error) {
			if tx++; tx == 1 {
				return "UPDATE t SET x = 1", deadlock{}
			}
			panic("boom")
		})
	})
	assert.Equal(t, "panic", attrs(s.spans.Ended()[0].Attributes())["error.type"].AsString())
	checkConventions(t, s)
}

// Retries, a give-up on crl's own span and one on the caller's span: every
// span, event and measurement follows the conventions.
func TestRetriesAndGiveUpsFollowTheConventions(t *testing.T) {
	s := newSetup(t, crlotel.Options{Driver: "sqlserver"})
	ctx := context.Background()
	require.NoError(t, s.retrier.Do(ctx, "update t", failing(1)))
	require.Error(t, s.retrier.Do(ctx, "update t", failing(5)))
	caller, span := s.tp.Tracer("app").Start(ctx, "checkout")
	require.Error(t, s.retrier.Do(caller, "delete from t", failing(5)))
	span.End()
	require.Len(t, s.spans.Ended(), 3)
	checkConventions(t, s)
}
