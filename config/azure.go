package config

import (
	"net/url"
	"strings"

	"github.com/crl-go/crl/internal/tables/family"
	"github.com/crl-go/crl/internal/tables/mssqldsn"
)

// The JDBC driver's defaults of connectRetryCount for Azure endpoints,
// used when no source sets connectRetryCount: 2 for Azure SQL
// (*.database.windows.net and its sovereign clouds), 5 for Synapse
// serverless (on-demand) endpoints.
const (
	azureSQLConnectRetryCount      = 2
	azureSynapseConnectRetryCount  = 5
	azureSynapseOnDemandInfix      = "-ondemand.sql.azuresynapse."
	azureSynapseOnDemandHostSuffix = "-ondemand"
)

// azureEndpoints are the domain suffixes of Azure SQL servers: the JDBC
// driver's (SQLServerConnection.AzureSQLServerEndpoints), whose Azure China
// entry is misspelt (".database.china.cloudapi.cn"), and the real Azure
// China domain, which the JDBC driver misses.
var azureEndpoints = [...]string{
	".database.windows.net",
	".database.cloudapi.de",
	".database.usgovcloudapi.net",
	".database.china.cloudapi.cn",
	".database.chinacloudapi.cn",
}

// azureConnectRetryCount returns the JDBC driver's default connectRetryCount
// for the server that dsn names, or 0 when the server is not an Azure
// endpoint or the driver is not go-mssqldb. driverDSN is the DSN as the
// driver gets it (our keys removed).
func azureConnectRetryCount(driverName, driverDSN string) int {
	if !family.Of(driverName).Profile().AzureDefaults {
		return 0
	}
	host := strings.ToLower(sqlServerHost(driverDSN))
	if host == "" {
		return 0
	}
	if strings.Contains(host, azureSynapseOnDemandInfix) {
		return azureSynapseConnectRetryCount
	}
	for _, e := range azureEndpoints {
		if strings.HasSuffix(host, azureSynapseOnDemandHostSuffix+e) {
			return azureSynapseConnectRetryCount
		}
	}
	for _, e := range azureEndpoints {
		if strings.HasSuffix(host, e) {
			return azureSQLConnectRetryCount
		}
	}
	return 0
}

// sqlServerHost returns the host name of a go-mssqldb DSN (URL, ADO or
// odbc: form), without a protocol prefix (tcp:), a port (,1433 or :1433)
// or an instance name (\SQLEXPRESS), or "" when there is none. An ADO or
// ODBC DSN is read by the one ADO reader (readADO), which splits it as
// go-mssqldb does: a ';' inside a quoted or braced value does not end it.
func sqlServerHost(dsn string) string {
	if strings.HasPrefix(dsn, "sqlserver://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return ""
		}
		return u.Hostname()
	}
	odbc := strings.HasPrefix(dsn, "odbc:")
	_, driver, _, err := readADO(strings.TrimPrefix(dsn, "odbc:"), odbc)
	if err != nil {
		return ""
	}
	var server string
	for _, p := range driver {
		if mssqldsn.IsServerKey(p.key, odbc) {
			server = p.value // the last one wins, as in the driver
		}
	}
	if i := strings.IndexByte(server, ':'); i >= 0 && !strings.Contains(server[:i], ".") {
		server = server[i+1:] // tcp:host
	}
	if i := strings.IndexAny(server, `,\`); i >= 0 {
		server = server[:i]
	}
	return strings.TrimSpace(server)
}
