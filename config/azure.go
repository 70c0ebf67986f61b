package config

import (
	"net/url"
	"strings"

	"github.com/crl-go/crl/internal/tables/mssqldsn"
	"github.com/crl-go/crl/internal/text/dsnlex"
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
// for a SQL Server whose host name is host, or 0 when it is not an Azure
// endpoint.
func azureConnectRetryCount(host string) int {
	host = strings.ToLower(host)
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

// sqlServerHost returns the host name of a go-mssqldb DSN of form f,
// without a protocol prefix (tcp:), a port (,1433 or :1433) or an
// instance name (\SQLEXPRESS), or "" when there is none. An ADO or ODBC
// DSN's server is read from its pairs, which the lexer split as
// go-mssqldb does: a ';' inside a quoted or braced value does not end one.
// A URL's host is read from driverDSN, the DSN without crl's keys.
func sqlServerHost(f dsnlex.Form, pairs []dsnlex.Pair, driverDSN string) string {
	if f == dsnlex.FormURL {
		u, err := url.Parse(driverDSN)
		if err != nil {
			return ""
		}
		return u.Hostname()
	}
	odbc := f == dsnlex.FormODBC
	var server string
	for _, p := range pairs {
		if p.Eq && mssqldsn.IsServerKey(strings.ToLower(p.Key), odbc) {
			server = p.Value // the last one wins, as in the driver
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
