package sqlxcrl_test

import (
	"database/sql"
	"testing"

	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

// wrappedName is go-mssqldb registered under a name of its own, as a
// tracing wrapper (otelsql, sqlhooks) registers it.
const wrappedName = "sqlserver-wrapped-conn19"

func init() { sql.Register(wrappedName, &mssql.Driver{}) }

// Open and WrapDB on a wrapped name with WithDriverFamily: the DSN's crl
// key is read and stripped as SQL Server's, the handle binds as SQL
// Server's (@p1), and the deadlock rule from the DSN retries.
func TestOpenWrappedDriverName(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, err := sqlxcrl.Open(wrappedName, srv.DSN()+"&retryExec={1205:1,0}", config.WithDriverFamily("sqlserver"))
	require.NoError(t, err)
	defer db.Close()
	assert.Equal(t, "SELECT @p1", db.Rebind("SELECT ?"), "binds as SQL Server")
	const q = "UPDATE t SET n = n + 1"
	srv.Handle(q, mssqltest.Error(1205), mssqltest.Affected(1))
	_, err = db.Exec(q)
	require.NoError(t, err)
	assert.Equal(t, 2, srv.Count(q), "the DSN's rule retried the deadlock")

	w, err := sqlxcrl.WrapDB(db.DB.DB, wrappedName, config.WithDriverFamily("sqlserver"))
	require.NoError(t, err)
	assert.Equal(t, "SELECT @p1", w.Rebind("SELECT ?"), "WrapDB binds as SQL Server too")

	_, err = sqlxcrl.Open(wrappedName, srv.DSN()+"&retryExec={1205:1,0}")
	require.Error(t, err, "without WithDriverFamily, crl's key cannot be read")
	assert.Contains(t, err.Error(), "config.WithDriverFamily", "the error names the option to use")
}
