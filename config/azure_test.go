package config

import (
	"strings"
	"testing"

	"github.com/microsoft/go-mssqldb/msdsn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/internal/tables/mssqldsn"
)

// The Azure default reads the server of an ADO or ODBC DSN with the one ADO
// reader: a ';' inside a quoted or braced value (a password, one of our
// rule lists) does not end it, so text inside a value is never taken for
// the server.
func TestAzureDefaultReadsTheServerAsTheDriverDoes(t *testing.T) {
	for _, tc := range []struct {
		driver, dsn string
		want        int
	}{
		{"sqlserver", `server=myhost;password="x;server=evil.database.windows.net";database=d`, 0},
		{"sqlserver", `server=myhost;password="a""b;server=evil.database.windows.net"`, 0},
		{"sqlserver", `password="a;b";server=myserver.database.windows.net;database=d`, 2},
		{"mssql", "odbc:server=myhost;pwd={x;server=evil.database.windows.net};database=d", 0},
		{"mssql", "odbc:pwd={a;b}};c};server={myserver.database.windows.net};database=d", 2},
		{"mssql", "odbc:server=myhost;password={a;b};retryExec={1205:3;1222:2,1}", 0},
		{"sqlserver", "server=myserver.database.windows.net;retryExec={1205:3;1222:2,1};database=d", 2},
		{"sqlserver", "retryExec={1205:3;1222:2,1};server=myserver.database.windows.net", 2},
		// go-mssqldb maps data source, address… to server in the ADO form only.
		{"mssql", "odbc:data source=myserver.database.windows.net;database=d", 0},
	} {
		assert.Equal(t, tc.want, azureConnectRetryCount(server(t, tc.driver, tc.dsn)), tc.dsn)
	}
}

// server returns the server that the DSN reader finds in dsn, a DSN of
// driver (sqlServerHost).
func server(t *testing.T, driver, dsn string) string {
	t.Helper()
	d, err := readDSN(driver, dsn)
	require.NoError(t, err, dsn)
	return d.server
}

// sqlServerHost agrees with go-mssqldb's own reading of the DSN.
func TestSQLServerHostIsTheDriversHost(t *testing.T) {
	for _, dsn := range []string{
		`server=myhost;password="x;server=evil.example.com";database=d`,
		`server=myhost;password="a""b;server=evil.example.com"`,
		`password="a;b";server=good.example.com;database=d`,
		`Data Source=good.example.com;Initial Catalog=d`,
		`address=good.example.com;server=other.example.com`,
		`server=tcp:good.example.com,1433;database=d`,
		`server=good.example.com\inst;database=d`,
		"odbc:server=myhost;pwd={x;server=evil.example.com};database=d",
		"odbc:pwd={a;b}};c};server={good.example.com};database=d",
		"odbc:data source=evil.example.com;database=d",
		"odbc:server = {good.example.com} ;database=d",
	} {
		if strings.Contains(dsn, `"`) && !driverReadsQuotedValues(t) {
			t.Logf("%s: the go-mssqldb in the build reads no quoted ADO values (before v1.9); crl reads them as newer ones do", dsn)
			continue
		}
		cfg, err := msdsn.Parse(dsn)
		require.NoError(t, err, dsn)
		host := server(t, "sqlserver", dsn)
		if host == "" {
			host = "localhost" // the driver's default
		}
		assert.Equal(t, strings.ToLower(cfg.Host), strings.ToLower(host), dsn)
	}
}

// Every key of the one list of server keys finds the server in the ADO
// form; in the odbc: form only server does, as in go-mssqldb.
func TestAzureDefaultKnowsEveryServerKey(t *testing.T) {
	keys := mssqldsn.ServerKeys()
	require.NotEmpty(t, keys)
	for _, k := range keys {
		cfg, err := msdsn.Parse(k + "=good.example.com")
		require.NoError(t, err, k)
		assert.Equal(t, "good.example.com", cfg.Host, "go-mssqldb takes %s for the server", k)
		dsn := "user id=sa;" + strings.ToUpper(k) + "=myserver.database.windows.net;database=d"
		assert.Equal(t, 2, azureConnectRetryCount(server(t, "sqlserver", dsn)), dsn)
		odbc := "odbc:" + k + "=myserver.database.windows.net"
		want := 0
		if k == "server" {
			want = 2
		}
		assert.Equal(t, want, azureConnectRetryCount(server(t, "mssql", odbc)), odbc)
	}
}

// driverReadsQuotedValues reports whether the go-mssqldb of the build
// reads a double-quoted ADO value as one value, as go-mssqldb does since
// v1.9 (crl's go.mod requires the lowest version the library needs, so
// that adding crl does not raise a user's; a user's build may have a
// newer one).
func driverReadsQuotedValues(t *testing.T) bool {
	t.Helper()
	cfg, err := msdsn.Parse(`server=a;password="x;server=b"`)
	require.NoError(t, err)
	return cfg.Host == "a"
}
