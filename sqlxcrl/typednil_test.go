package sqlxcrl_test

import (
	"database/sql/driver"
	"testing"

	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/gormcrl"
	"github.com/crl-go/crl/sqlxcrl"
)

// TestTypedNilConnectorIsAnErrorAtOpen: (*mssql.Connector)(nil) is a
// non-nil driver.Connector whose first Connect panics; every entry point
// that takes a connector refuses it when it opens, with one message.
func TestTypedNilConnectorIsAnErrorAtOpen(t *testing.T) {
	var c driver.Connector = (*mssql.Connector)(nil) // a nil pointer in a non-nil interface

	_, _, err := crl.WrapConnector(c, "sqlserver")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nil *mssql.Connector")

	db, err := sqlxcrl.OpenDB(c, "sqlserver")
	require.Error(t, err)
	assert.Nil(t, db)
	assert.Contains(t, err.Error(), "nil *mssql.Connector")

	_, err = gorm.Open(gormcrl.OpenDB(sqlserver.New(sqlserver.Config{}), c), &gorm.Config{Logger: logger.Discard})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nil *mssql.Connector")
}
