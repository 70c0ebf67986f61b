package sqlxcrl_test

import (
	"context"
	"testing"

	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

// OpenDB over go-mssqldb's own connector (and its access-token provider
// connector, as an Azure SQL service with a managed identity opens it): a
// first login that fails transiently (40613) is retried by the JDBC
// algorithm — with connectRetryCount=1, the login loop's immediate retry:
// 2 logins — and a statement rule retries a deadlock on the same handle.
func TestOpenDBOverTheDriversConnector(t *testing.T) {
	for name, connector := range map[string]func(dsn string) (*mssql.Connector, error){
		"NewConnector": mssql.NewConnector,
		"NewConnectorWithAccessTokenProvider": func(dsn string) (*mssql.Connector, error) {
			return mssql.NewConnectorWithAccessTokenProvider(dsn, func(context.Context) (string, error) { return "token", nil })
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := mssqltest.NewServer(t)
			c, err := connector(srv.DSN())
			require.NoError(t, err)
			db, err := sqlxcrl.OpenDB(c, "sqlserver", sqlxcrl.WithRetryExec("{1205:2,0}"))
			require.NoError(t, err)
			defer db.Close()
			srv.FailLogin(40613, 1)
			require.NoError(t, db.Ping(), "the login loop retried the failed login")
			assert.Equal(t, 2, srv.Logins(), "logins: the JDBC algorithm's")

			srv.Handle("UPDATE t SET n = n + 1", mssqltest.Error(1205), mssqltest.Affected(1))
			_, err = db.Exec("UPDATE t SET n = n + 1")
			require.NoError(t, err)
			assert.Equal(t, 2, srv.Count("UPDATE t SET n = n + 1"), "the deadlock was retried")
		})
	}
}

// A wrapped driver name (a tracing wrapper registers sqlserver-otel, say):
// with WithDriverFamily, OpenDB binds as SQL Server (@p1) and the
// properties file is looked for as for SQL Server; NewDb's and Open's DSN
// keys are read as that family's. Without it, a DSN with crl's keys is an
// error that names the option.
func TestWrappedDriverName(t *testing.T) {
	srv := mssqltest.NewServer(t)
	c, err := mssql.NewConnector(srv.DSN())
	require.NoError(t, err)
	db, err := sqlxcrl.OpenDB(c, "sqlserver-otel", config.WithDriverFamily("sqlserver"), sqlxcrl.WithRetryExec("{1205:1,0}"))
	require.NoError(t, err)
	defer db.Close()
	assert.Equal(t, "sqlserver", db.Runtime().DriverFamily())
	assert.Equal(t, "SELECT @p1", db.Rebind("SELECT ?"), "binds as SQL Server")

	_, _, err = config.ParseDSN("sqlserver-otel", "sqlserver://h?retryExec={1205:1,0}")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "config.WithDriverFamily", "the error names the option to use")
	cfg, driverDSN, err := config.NewRuntime("sqlserver-otel", "sqlserver://h?database=x&retryExec={1205:1,0}", config.WithDriverFamily("sqlserver"))
	require.NoError(t, err)
	assert.Equal(t, "sqlserver://h?database=x", driverDSN, "crl's key stripped for the named family")
	assert.Equal(t, "sqlserver", cfg.DriverFamily())

	_, err = sqlxcrl.OpenDB(c, "sqlserver-otel", config.WithDriverFamily("oracle"))
	require.Error(t, err)
	assert.ErrorIs(t, err, config.ErrInvalidValue)
	assert.Contains(t, err.Error(), `"oracle"`)
	_, err = sqlxcrl.OpenDB(nil, "sqlserver")
	assert.Error(t, err, "a nil connector")
}
