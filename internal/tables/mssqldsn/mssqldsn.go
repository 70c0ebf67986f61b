// Package mssqldsn holds what crl knows of go-mssqldb's connection strings
// that more than one package needs: the keys that name the server. It is
// the one list behind config (the Azure default reads the server) and
// cmd/crl (which tells a DSN's driver from its form), so that the two
// cannot drift apart.
package mssqldsn

// adoServerKeys are the keys that name the server in a go-mssqldb ADO
// connection string: server and its ADO synonyms, lower-case.
var adoServerKeys = [...]string{"server", "data source", "address", "addr", "network address"}

// ServerKeys returns the keys that name the server in a go-mssqldb ADO
// connection string (server=…;), lower-case: server and its synonyms.
func ServerKeys() []string { return append([]string(nil), adoServerKeys[:]...) }

// IsServerKey reports whether key (lower-case, trimmed) names the server in
// a go-mssqldb ADO connection string or, when odbc, in its odbc: form,
// where go-mssqldb knows server alone (it maps the synonyms in the ADO form
// only).
func IsServerKey(key string, odbc bool) bool {
	if odbc {
		return key == adoServerKeys[0]
	}
	for _, k := range adoServerKeys {
		if key == k {
			return true
		}
	}
	return false
}
