package otel_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	crlotel "github.com/crl-go/crl/hooks/otel"
	"github.com/crl-go/crl/mssqltest"
)

// testName is a name of this test's own, unique among the tests that
// share the servers.
func testName() string {
	return fmt.Sprintf("crlotel_%d_%d", os.Getpid(), time.Now().UnixNano()%1_000_000_000)
}

// deadlockingPostgres makes a function that always fails with a real
// PostgreSQL deadlock error (SQLSTATE 40P01) and returns a statement that
// calls it.
func deadlockingPostgres(t *testing.T, db *sql.DB) string {
	name := testName()
	_, err := db.Exec("CREATE FUNCTION " + name + "() RETURNS int LANGUAGE plpgsql AS $$ BEGIN " +
		"RAISE EXCEPTION 'deadlock detected' USING ERRCODE = 'deadlock_detected'; END $$")
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := db.Exec("DROP FUNCTION " + name + "()")
		assert.NoError(t, err)
	})
	return "SELECT " + name + "()"
}

// deadlockingMySQL makes a function that always fails with MySQL's
// deadlock error (1213, SQLSTATE 40001) and returns a statement that calls
// it.
func deadlockingMySQL(t *testing.T, db *sql.DB) string {
	name := testName()
	_, err := db.Exec("CREATE FUNCTION " + name + "() RETURNS INT DETERMINISTIC NO SQL BEGIN " +
		"SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213, " +
		"MESSAGE_TEXT = 'Deadlock found when trying to get lock; try restarting transaction'; RETURN 1; END")
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := db.Exec("DROP FUNCTION " + name)
		assert.NoError(t, err)
	})
	return "SELECT " + name + "()"
}

// A real deadlock on each database, retried once and given up: the retry
// event, the give-up span and the three instruments carry the status code
// the conventions name for the system (PostgreSQL's SQLSTATE, MySQL's and
// SQL Server's error number) and the same error.type.
func TestRealDeadlocksCarryTheirStatusCode(t *testing.T) {
	srv := mssqltest.NewServer(t)
	const mssqlDeadlock = "UPDATE stock SET n = n - 1 WHERE id = 7"
	cases := []struct {
		name, driver, env, system, code string
		statement                       func(t *testing.T, admin *sql.DB) string
	}{
		{name: "postgresql", driver: "pgx", env: "CRL_POSTGRES_DSN", system: "postgresql", code: "40P01", statement: deadlockingPostgres},
		{name: "mysql", driver: "mysql", env: "CRL_MYSQL_DSN", system: "mysql", code: "1213", statement: deadlockingMySQL},
		{name: "sql server", driver: "sqlserver", system: "microsoft.sql_server", code: "1205",
			statement: func(*testing.T, *sql.DB) string {
				srv.Handle(mssqlDeadlock, mssqltest.Error(1205), mssqltest.Error(1205))
				return mssqlDeadlock
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dsn := srv.DSN()
			if c.env != "" {
				if dsn = os.Getenv(c.env); dsn == "" {
					t.Skipf("%s is not set", c.env)
				}
			}
			admin, err := sql.Open(c.driver, dsn)
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, admin.Close()) }) // after the statement's own clean-up
			query := c.statement(t, admin)

			s := &setup{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
			s.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(s.spans))
			s.obs, err = crlotel.New(crlotel.Options{Driver: c.driver, DSN: dsn, TracerProvider: s.tp,
				MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(s.reader))})
			require.NoError(t, err)
			defer s.obs.Close()
			db, err := crl.Open(c.driver, dsn, crl.WithRetryExec("{"+c.code+":1,0}"),
				config.WithoutRetryBudget(), config.WithObserver(s.obs))
			require.NoError(t, err)
			defer db.Close()

			_, err = db.ExecContext(context.Background(), query)
			require.Error(t, err, "the deadlock, retried once, then returned")

			ended := s.spans.Ended()
			require.Len(t, ended, 1, "one span: the retried statement's")
			span := ended[0]
			assert.Equal(t, "crl.retry statement", span.Name())
			assert.Equal(t, codes.Error, span.Status().Code)
			gaveUp := attrs(span.Attributes())
			assert.Equal(t, c.system, gaveUp["db.system.name"].AsString())
			assert.Equal(t, "exhausted", gaveUp["crl.give_up.reason"].AsString())
			assert.Equal(t, c.code, gaveUp["db.response.status_code"].AsString(), "the give-up's status code")
			assert.Equal(t, c.code, gaveUp["error.type"].AsString(), "the give-up's error.type")
			require.NotEmpty(t, span.Events())
			retry := attrs(span.Events()[0].Attributes)
			assert.Equal(t, "crl.retry", span.Events()[0].Name)
			assert.Equal(t, c.code, retry["db.response.status_code"].AsString(), "the retry's status code")
			assert.Equal(t, c.code, retry["error.type"].AsString(), "the retry's error.type")
			assert.Equal(t, c.code, retry["crl.retry.token"].AsString())

			got := map[string]string{}
			for name, dps := range measurements(t, s) {
				for _, a := range dps {
					if et, ok := a["error.type"]; ok {
						got[name] = et.AsString() + " " + a["db.response.status_code"].Emit() + " " + a["db.system.name"].Emit()
					}
				}
			}
			want := c.code + " " + c.code + " " + c.system
			assert.Equal(t, map[string]string{"crl.retries": want, "crl.give_ups": want, "db.client.operation.duration": want}, got)
			checkConventions(t, s)
			for k := range gaveUp {
				assert.NotContains(t, []attribute.Key{"db.user", "user.name"}, k, "no credentials")
			}
		})
	}
}
