package gormcrl_test

import (
	"database/sql"
	"fmt"
	"os"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/crltest"
	"github.com/crl-go/crl/gormcrl"
	"github.com/crl-go/crl/mssqltest"
)

// pluginRow is the row of the plugin's tests; each test names its table.
type pluginRow struct {
	ID   int64
	Name string
}

// db.Use(gormcrl.New(...)) over mysql.Open(dsn), with a rule and with
// none (the default rule): the plugin opens the pool again through the
// driver layer, so a deadlock on Create (injected on the INSERT, once) is
// retried and the row is written once.
func TestUseOverMySQLDSNRetriesCreate(t *testing.T) {
	dsn := os.Getenv("CRL_MYSQL_DSN")
	if dsn == "" {
		t.Skip("CRL_MYSQL_DSN not set")
	}
	for name, opts := range map[string][]gormcrl.Option{
		"rule":    {gormcrl.WithRetryExec("{1213:3,10ms}")},
		"default": nil,
	} {
		t.Run(name, func(t *testing.T) {
			db, err := gorm.Open(mysql.Open(dsn), &gorm.Config{Logger: logger.Discard})
			require.NoError(t, err)
			require.NoError(t, db.Use(gormcrl.New(opts...)))
			sqlDB, err := db.DB()
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, sqlDB.Close()) })
			_, crlPool := crl.RuntimeOf(sqlDB)
			require.True(t, crlPool, "the plugin opened the pool through the driver layer")

			table := fmt.Sprintf("gormcrl_use_%s_%d", name, time.Now().UnixNano())
			require.NoError(t, db.Table(table).Migrator().CreateTable(&pluginRow{}))
			t.Cleanup(func() { _ = db.Migrator().DropTable(table) })

			crltest.Inject(sqlDB, crltest.Fault{Err: crltest.Deadlock("mysql"), Match: "INSERT", Times: 1, T: t})
			require.NoError(t, db.Table(table).Create(&pluginRow{Name: "pen"}).Error, "the deadlock was retried")
			var n int64
			require.NoError(t, db.Table(table).Count(&n).Error)
			assert.Equal(t, int64(1), n, "rows written")
		})
	}
}

// Over a pool crl did not open (a dialector given a Conn of the user's),
// on MariaDB and PostgreSQL: the plugin registers without settings,
// Transaction runs the closure once, commits, and returns the closure's
// error as it is; settings given to New are refused, naming crl.OpenDB.
func TestForeignPool(t *testing.T) {
	for _, c := range []struct {
		family, env, driver string
		dialector           func(*sql.DB) gorm.Dialector
	}{
		{"mysql", "CRL_MYSQL_DSN", "mysql", func(p *sql.DB) gorm.Dialector { return mysql.New(mysql.Config{Conn: p}) }},
		{"postgres", "CRL_POSTGRES_DSN", "pgx", func(p *sql.DB) gorm.Dialector { return postgres.New(postgres.Config{Conn: p}) }},
	} {
		t.Run(c.family, func(t *testing.T) {
			dsn := os.Getenv(c.env)
			if dsn == "" {
				t.Skip(c.env + " not set")
			}
			pool, err := sql.Open(c.driver, dsn)
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, pool.Close()) })

			refused, err := gorm.Open(c.dialector(pool), &gorm.Config{Logger: logger.Discard})
			require.NoError(t, err)
			err = refused.Use(gormcrl.New(gormcrl.WithRetryExec("{deadlock:3,10ms}")))
			require.ErrorContains(t, err, "crl.OpenDB")

			db, err := gorm.Open(c.dialector(pool), &gorm.Config{Logger: logger.Discard})
			require.NoError(t, err)
			require.NoError(t, db.Use(gormcrl.New()))
			table := fmt.Sprintf("gormcrl_foreign_%d", time.Now().UnixNano())
			require.NoError(t, db.Table(table).Migrator().CreateTable(&pluginRow{}))
			t.Cleanup(func() { _ = db.Migrator().DropTable(table) })

			calls := 0
			require.NoError(t, gormcrl.Transaction(db, func(tx *gorm.DB) error {
				calls++
				return tx.Table(table).Create(&pluginRow{Name: "pen"}).Error
			}))
			assert.Equal(t, 1, calls, "runs of the closure")

			deadlock := &gomysql.MySQLError{Number: 1213, Message: "Deadlock found"}
			calls = 0
			err = gormcrl.Transaction(db, func(tx *gorm.DB) error {
				calls++
				if err := tx.Table(table).Create(&pluginRow{Name: "ink"}).Error; err != nil {
					return err
				}
				return deadlock
			})
			assert.Same(t, deadlock, err, "the closure's error as it is")
			assert.Equal(t, 1, calls, "runs of the closure")

			var n int64
			require.NoError(t, db.Table(table).Count(&n).Error)
			assert.Equal(t, int64(1), n, "the first committed, the second rolled back")
		})
	}
}

// Over a pool crl opened, the plugin takes the pool's settings: settings
// given to New too would apply to nothing, and are refused, naming where
// they go.
func TestSettingsForACrlPoolRefused(t *testing.T) {
	s := mssqltest.NewServer(t)
	pool, err := crl.Open("sqlserver", s.DSN(), crl.WithRetryExec("{1205:2,10ms}"))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, pool.Close()) })
	db, err := gorm.Open(sqlserver.New(sqlserver.Config{Conn: pool}), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	require.ErrorContains(t, db.Use(gormcrl.New(gormcrl.WithRetryExec("{1205:3,10ms}"))), "give them to crl.Open")
	p := gormcrl.New()
	require.NoError(t, db.Use(p))
	rt, _ := crl.RuntimeOf(pool)
	assert.Same(t, rt, p.Runtime(), "the pool's settings")
}
