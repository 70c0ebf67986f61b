package crl

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/mssqltest"
)

// TestRegisteredOpenReadsItsDSN: the Open of a Register name's driver
// (database/sql calls OpenConnector; Open is there for the
// driver.Driver interface) reads crl's keys and hands the driver the DSN
// without them; a near-miss of a key is an error naming it, and nothing
// reaches the server.
func TestRegisteredOpenReadsItsDSN(t *testing.T) {
	srv := mssqltest.NewServer(t)
	d := &registered{driverName: "sqlserver", opts: []Option{WithRetryExec("{1205:1,0}")}}
	conn, err := d.Open(srv.DSN() + "&retryConn={%2B4060}&connectRetryCount=2")
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	assert.Equal(t, 1, srv.Logins())

	_, err = d.Open(srv.DSN() + "&retryConnn={%2B4060}")
	require.ErrorIs(t, err, config.ErrUnknownKey)
	assert.Contains(t, err.Error(), "retryConnn")
	assert.Equal(t, 1, srv.Logins(), "nothing reached the server")
}
