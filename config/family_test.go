package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/internal/tables/family"
	"github.com/crl-go/crl/internal/testsupport/familyprobe"
)

// The DSN reader and the Azure defaults accept exactly the names
// of the one table of driver families, in any case.
func TestFamiliesOfTheDSNReader(t *testing.T) {
	dsnOf := map[family.Family]string{
		family.SQLServer: "sqlserver://h?retryExec={1205:1,0}",
		family.MySQL:     "u@tcp(h)/d?retryExec={1205:1,0}",
		family.Postgres:  "postgres://h/d?retryExec={1205:1,0}",
		family.Other:     "sqlserver://h?retryExec={1205:1,0}",
	}
	for name, want := range familyprobe.Names() {
		c, _, err := ParseDSN(name, dsnOf[want])
		if want == family.Other {
			assert.Error(t, err, "%q is no family's: its DSN is not read", name)
		} else {
			require.NoError(t, err, "%q", name)
			assert.NotEmpty(t, c.RetryExec, "%q: retryExec read", name)
		}
		azure := 0
		if want == family.SQLServer {
			azure = azureSQLConnectRetryCount
		}
		var server string
		if d, err := readDSN(name, "server=db.database.windows.net"); err == nil {
			server = d.server
		}
		assert.Equal(t, azure, azureConnectRetryCount(server), "%q: Azure's default", name)
	}
}
