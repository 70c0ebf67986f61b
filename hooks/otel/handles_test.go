package otel_test

import (
	"context"
	"os"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/crl-go/crl/config"
	crlotel "github.com/crl-go/crl/hooks/otel"
	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

// On a real handle of each family, the measurements say which database
// it is: the hook is given the handle's driver name and DSN.
func TestRealHandlesSayTheirSystem(t *testing.T) {
	srv := mssqltest.NewServer(t)
	srv.Handle("SELECT 1", mssqltest.Rows([]string{"x"}, []any{int64(1)}))
	cases := []struct {
		name, driver, env, dsn, system, want string
	}{
		{name: "postgresql", driver: "pgx", env: "CRL_POSTGRES_DSN", want: "postgresql"},
		{name: "mariadb as mysql", driver: "mysql", env: "CRL_MYSQL_DSN", want: "mysql"},
		{name: "mariadb", driver: "mysql", env: "CRL_MYSQL_DSN", system: "mariadb", want: "mariadb"},
		{name: "sql server", driver: "sqlserver", dsn: srv.DSN(), want: "microsoft.sql_server"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dsn := c.dsn
			if c.env != "" {
				if dsn = os.Getenv(c.env); dsn == "" {
					t.Skipf("%s is not set", c.env)
				}
			}
			reader := sdkmetric.NewManualReader()
			obs, err := crlotel.New(crlotel.Options{Driver: c.driver, DSN: dsn, DBSystem: c.system,
				MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
			require.NoError(t, err)
			defer obs.Close()
			db, err := sqlxcrl.Connect(c.driver, dsn, config.WithObserver(obs))
			require.NoError(t, err)
			defer db.Close()
			var x int
			require.NoError(t, db.GetContext(context.Background(), &x, "SELECT 1"))

			var rm metricdata.ResourceMetrics
			require.NoError(t, reader.Collect(context.Background(), &rm))
			seen := map[string]uint64{}
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == "db.client.operation.duration" {
						for _, dp := range h.DataPoints {
							sys, _ := dp.Attributes.Value("db.system.name")
							op, _ := dp.Attributes.Value("db.operation.name")
							_, ns := dp.Attributes.Value("db.namespace")
							_, addr := dp.Attributes.Value("server.address")
							assert.True(t, ns && addr, "db.namespace and server.address from the DSN")
							seen[sys.Emit()+" "+op.Emit()] += dp.Count
						}
					}
				}
			}
			assert.Equal(t, uint64(1), seen[c.want+" SELECT"], "the SELECT, timed: %v", seen)
		})
	}
}
