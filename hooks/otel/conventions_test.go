package otel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/crl-go/crl/core"
	crlotel "github.com/crl-go/crl/hooks/otel"
)

// The acceptance case of issue 22: a transaction fails with a deadlock,
// then panics on its retry. Its span ends (status Error, the panic
// noted), the panic reaches the caller, and with MaxOpenSpans 1 the next
// operation still gets its span.
func TestPanicOnARetryEndsTheSpan(t *testing.T) {
	s := newSetup(t, crlotel.Options{MaxOpenSpans: 1})
	ctx := context.Background()
	tx := 0
	recovered := func() (v any) {
		defer func() { v = recover() }()
		_ = s.retrier.DoTx(ctx, func(context.Context) (string, error) {
			if tx++; tx == 1 {
				return "UPDATE accounts SET balance = 0", deadlock{}
			}
			panic("boom")
		})
		return nil
	}()
	require.Equal(t, "boom", recovered, "the panic goes on to the caller")
	require.Len(t, s.spans.Started(), 1)
	ended := s.spans.Ended()
	require.Len(t, ended, 1, "spans started = spans ended")
	sp := ended[0]
	assert.Equal(t, "crl.retry transaction", sp.Name())
	assert.Equal(t, codes.Error, sp.Status().Code)
	assert.Equal(t, "panic", attrs(sp.Attributes())["error.type"].AsString())
	ev := sp.Events()
	require.Len(t, ev, 2)
	assert.Equal(t, "crl.retry", ev[0].Name)
	assert.Equal(t, "exception", ev[1].Name)
	assert.Equal(t, "boom", attrs(ev[1].Attributes)["exception.message"].AsString())
	assert.Equal(t, "string", attrs(ev[1].Attributes)["exception.type"].AsString())

	require.NoError(t, s.retrier.Do(ctx, "UPDATE t SET x = 1", failing(1)))
	require.Len(t, s.spans.Started(), 2, "the slot is free: the next operation gets its span")
	require.Len(t, s.spans.Ended(), 2)
	assert.Equal(t, codes.Unset, s.spans.Ended()[1].Status().Code)
}

func TestPanicOnTheCallersSpanIsAnEvent(t *testing.T) {
	s := newSetup(t, crlotel.Options{})
	ctx, span := s.tp.Tracer("app").Start(context.Background(), "checkout")
	calls := 0
	assert.PanicsWithError(t, "bad", func() {
		_ = s.retrier.Do(ctx, "select 1", func(context.Context) error {
			if calls++; calls == 1 {
				return deadlock{}
			}
			panic(errors.New("bad"))
		})
	})
	span.End()
	ended := s.spans.Ended()
	require.Len(t, ended, 1, "no span of crl's: the caller's has the events")
	ev := ended[0].Events()
	require.Len(t, ev, 2)
	assert.Equal(t, "crl.panicked", ev[1].Name)
	assert.Equal(t, "*errors.errorString", attrs(ev[1].Attributes)["exception.type"].AsString())
}

// duration is one data point of db.client.operation.duration.
type duration struct {
	count  uint64
	sum    float64
	bounds []float64
}

// durations collects db.client.operation.duration by the attributes
// named, joined with "/".
func durations(t *testing.T, s *setup, keys ...attribute.Key) map[string]duration {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, s.reader.Collect(context.Background(), &rm))
	out := map[string]duration{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "db.client.operation.duration" {
				continue
			}
			assert.Equal(t, "s", m.Unit)
			h, ok := m.Data.(metricdata.Histogram[float64])
			require.True(t, ok, "a histogram")
			for _, dp := range h.DataPoints {
				key := ""
				for i, k := range keys {
					v, _ := dp.Attributes.Value(k)
					if i > 0 {
						key += "/"
					}
					key += v.Emit()
				}
				out[key] = duration{count: dp.Count, sum: dp.Sum, bounds: dp.Bounds}
			}
		}
	}
	return out
}

func TestOperationDuration(t *testing.T) {
	s := newSetup(t, crlotel.Options{Driver: "sqlserver"})
	ctx := context.Background()
	took := func(d time.Duration, errs ...error) func(context.Context) error {
		calls := 0
		return func(context.Context) error {
			s.clock.Advance(d)
			if calls++; calls <= len(errs) {
				return errs[calls-1]
			}
			return nil
		}
	}
	for range 3 {
		require.NoError(t, s.retrier.Do(ctx, "select 1", took(2*time.Millisecond)))
	}
	require.NoError(t, s.retrier.Do(ctx, "  update t set x = 1", took(time.Millisecond, deadlock{})))
	require.Error(t, s.retrier.Do(ctx, "delete from t", took(0, deadlock{}, deadlock{}, deadlock{})))
	require.NoError(t, s.retrier.DoTx(ctx, func(context.Context) (string, error) {
		s.clock.Advance(10 * time.Millisecond)
		return "", nil
	}))
	require.NoError(t, s.retrier.Connect(ctx, func(context.Context) error { return nil }))

	got := durations(t, s, crlotel.KindKey, "db.operation.name", "error.type", "db.system.name")
	assert.Equal(t, map[string]duration{
		"statement/SELECT//microsoft.sql_server":     {count: 3, sum: 0.006, bounds: crlotel.DurationBuckets()},
		"statement/UPDATE//microsoft.sql_server":     {count: 1, sum: 1.5 + 0.002, bounds: crlotel.DurationBuckets()},
		"statement/DELETE/1205/microsoft.sql_server": {count: 1, sum: 1.5 + 3.5, bounds: crlotel.DurationBuckets()},
		"transaction///microsoft.sql_server":         {count: 1, sum: 0.01, bounds: crlotel.DurationBuckets()},
		"connection///microsoft.sql_server":          {count: 1, sum: 0, bounds: crlotel.DurationBuckets()},
	}, got, "one measurement per operation, retries and waits included, in seconds")
}

func TestRetryAndGiveUpCounters(t *testing.T) {
	s := newSetup(t, crlotel.Options{})
	ctx := context.Background()
	require.NoError(t, s.retrier.Do(ctx, "update t", failing(2)))
	require.Error(t, s.retrier.Do(ctx, "update t", failing(5)))
	var rm metricdata.ResourceMetrics
	require.NoError(t, s.reader.Collect(ctx, &rm))
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok || (m.Name != "crl.retries" && m.Name != "crl.give_ups") {
				continue
			}
			for _, dp := range sum.DataPoints {
				et, _ := dp.Attributes.Value("error.type")
				tok, _ := dp.Attributes.Value("crl.retry.token")
				reason, _ := dp.Attributes.Value("crl.give_up.reason")
				got[m.Name+" "+et.Emit()+" "+tok.Emit()+reason.Emit()] = dp.Value
			}
		}
	}
	assert.Equal(t, map[string]int64{
		"crl.retries 1205 1205":       4,
		"crl.give_ups 1205 exhausted": 1,
	}, got)
}

func TestSystemAndEndpointFromTheHandle(t *testing.T) {
	cases := []struct {
		name, driver, dsn, system string
		want                      map[attribute.Key]attribute.Value
	}{
		{"postgres URL", "pgx", "postgres://app:secret@db.example:6432/orders?sslmode=disable&retryExec={40P01:3,1}", "",
			map[attribute.Key]attribute.Value{"db.system.name": attribute.StringValue("postgresql"),
				"db.namespace": attribute.StringValue("orders"), "server.address": attribute.StringValue("db.example"), "server.port": attribute.IntValue(6432)}},
		{"postgres keyword/value", "postgres", "host=10.0.0.5 port=5433 dbname='my db' user=app", "",
			map[attribute.Key]attribute.Value{"db.system.name": attribute.StringValue("postgresql"),
				"db.namespace": attribute.StringValue("my db"), "server.address": attribute.StringValue("10.0.0.5"), "server.port": attribute.IntValue(5433)}},
		{"sql server URL", "sqlserver", "sqlserver://sa:pw@sql.example:1433/SQLEXPRESS?database=shop&retryExec={1205:3,1}", "",
			map[attribute.Key]attribute.Value{"db.system.name": attribute.StringValue("microsoft.sql_server"),
				"db.namespace": attribute.StringValue("SQLEXPRESS|shop"), "server.address": attribute.StringValue("sql.example"), "server.port": attribute.IntValue(1433)}},
		{"sql server ADO", "mssql", "server=sql.example;database=shop;user id=sa;password=pw;retryExec={1205:3;1222:2,1}", "",
			map[attribute.Key]attribute.Value{"db.system.name": attribute.StringValue("microsoft.sql_server"),
				"db.namespace": attribute.StringValue("shop"), "server.address": attribute.StringValue("sql.example")}},
		{"mysql", "mysql", "root:pw@tcp(127.0.0.1:3306)/test?parseTime=true&retryExec={1213:3,1}", "",
			map[attribute.Key]attribute.Value{"db.system.name": attribute.StringValue("mysql"),
				"db.namespace": attribute.StringValue("test"), "server.address": attribute.StringValue("127.0.0.1"), "server.port": attribute.IntValue(3306)}},
		{"mariadb", "mysql", "root@tcp(maria.example)/shop", "mariadb",
			map[attribute.Key]attribute.Value{"db.system.name": attribute.StringValue("mariadb"),
				"db.namespace": attribute.StringValue("shop"), "server.address": attribute.StringValue("maria.example"), "server.port": attribute.IntValue(3306)}},
		{"mariadb driver name", "mariadb", "root@tcp(maria.example:3307)/shop", "",
			map[attribute.Key]attribute.Value{"db.system.name": attribute.StringValue("mysql"),
				"db.namespace": attribute.StringValue("shop"), "server.address": attribute.StringValue("maria.example"), "server.port": attribute.IntValue(3307)}},
		{"unknown", "", "", "",
			map[attribute.Key]attribute.Value{"db.system.name": attribute.StringValue("other_sql")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSetup(t, crlotel.Options{Driver: c.driver, DSN: c.dsn, DBSystem: c.system})
			require.NoError(t, s.retrier.Do(context.Background(), "update t", failing(1)))
			require.Len(t, s.spans.Ended(), 1)
			got := map[attribute.Key]attribute.Value{}
			for k, v := range attrs(s.spans.Ended()[0].Attributes()) {
				if _, ok := c.want[k]; ok || k == "db.namespace" || k == "server.address" || k == "server.port" {
					got[k] = v
				}
			}
			assert.Equal(t, c.want, got)
			for k := range attrs(s.spans.Ended()[0].Attributes()) {
				assert.NotContains(t, []attribute.Key{"db.user", "user.name"}, k, "no credentials")
			}
		})
	}
}

func TestBadDriverOrDSN(t *testing.T) {
	_, err := crlotel.New(crlotel.Options{Driver: "oracle"})
	require.ErrorContains(t, err, `Driver "oracle"`)
	_, err = crlotel.New(crlotel.Options{Driver: "oracle", DBSystem: "oracle.db"})
	require.NoError(t, err, "DBSystem says what the driver name does not")
	_, err = crlotel.New(crlotel.Options{Driver: "mysql", DSN: "no-at-sign-or-slash"})
	require.ErrorContains(t, err, `otel: DSN of driver "mysql"`)
	_, err = crlotel.New(crlotel.Options{Driver: "sqlserver", DSN: "server=x;retryExec={1205:x}"})
	require.Error(t, err, "crl's own keys are read as the adapters read them")
}

// The core's end event is what closes spans: an operation that ended
// without Succeeded or GaveUp (here told by hand) does not keep its span.
func TestOperationEndedClosesAnOpenSpan(t *testing.T) {
	s := newSetup(t, crlotel.Options{})
	ctx := context.Background()
	s.obs.RetryScheduled(core.RetryScheduled{Context: ctx, Op: 9, Attempt: 1, Err: deadlock{}})
	s.obs.OperationEnded(core.OperationEnded{Context: ctx, Op: 9, Err: deadlock{}})
	require.Len(t, s.spans.Ended(), 1)
	assert.Equal(t, codes.Error, s.spans.Ended()[0].Status().Code)
	assert.Equal(t, "1205", attrs(s.spans.Ended()[0].Attributes())["error.type"].AsString())
}

func TestABadURLDoesNotQuoteThePassword(t *testing.T) {
	_, err := crlotel.New(crlotel.Options{Driver: "pgx", DSN: "postgres://app:s3cret@host:bad port/db"})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "s3cret")
}

func TestABadKeywordValueDSNDoesNotQuoteThePassword(t *testing.T) {
	_, err := crlotel.New(crlotel.Options{Driver: "postgres", DSN: "host=db port=bad password=s3cret"})
	require.ErrorContains(t, err, `otel: DSN of driver "postgres"`)
	assert.NotContains(t, err.Error(), "s3cret")
}

func TestABadSQLServerURLDoesNotQuoteThePassword(t *testing.T) {
	_, err := crlotel.New(crlotel.Options{Driver: "sqlserver", DSN: "sqlserver://sa:s3cret@host:bad port?database=x"})
	if err != nil {
		assert.NotContains(t, err.Error(), "s3cret")
	}
}
