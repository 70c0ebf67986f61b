package gormcrl_test

import (
	"database/sql"
	"testing"

	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/gormcrl"
	"github.com/crl-go/crl/mssqltest"
)

// wrappedGormDriver is go-mssqldb registered under a name of its own, as
// a tracing wrapper registers it.
const wrappedGormDriver = "sqlserver-wrapped-gorm-conn19"

func init() { sql.Register(wrappedGormDriver, &mssql.Driver{}) }

// A dialector whose DriverName is a wrapped name: the DSN is read as the
// dialector's family (its Name, sqlserver), so crl's key is stripped and
// its rule retries, with or without WithDriverFamily.
func TestOpenDialectorWithWrappedDriverName(t *testing.T) {
	for name, opts := range map[string][]gormcrl.Option{
		"by the dialector's name": nil,
		"WithDriverFamily":        {config.WithDriverFamily("sqlserver")},
	} {
		t.Run(name, func(t *testing.T) {
			srv := mssqltest.NewServer(t)
			d := sqlserver.New(sqlserver.Config{DSN: srv.DSN() + "&retryExec={1205:1,0}", DriverName: wrappedGormDriver})
			db, err := gorm.Open(gormcrl.Open(d, opts...), &gorm.Config{Logger: logger.Discard})
			require.NoError(t, err)
			sqlDB, err := db.DB()
			require.NoError(t, err)
			defer sqlDB.Close()
			inner, ok := db.Dialector.(*sqlserver.Dialector)
			require.True(t, ok, "db.Dialector is %T", db.Dialector)
			assert.NotContains(t, inner.DSN, "retryExec", "crl's key stripped before the driver")

			const q = "UPDATE t SET n = n + 1"
			srv.Handle(q, mssqltest.Error(1205), mssqltest.Affected(1))
			require.NoError(t, db.Exec(q).Error)
			assert.Equal(t, 2, srv.Count(q), "the DSN's rule retried the deadlock")
		})
	}
}
