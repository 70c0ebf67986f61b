package crl_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	gormmysql "gorm.io/driver/mysql"
	gormpostgres "gorm.io/driver/postgres"
	gormsqlserver "gorm.io/driver/sqlserver"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/conformance"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/gormcrl"
	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

// server is one of the three families, its DSN holding crl's keys.
type server struct {
	name, driver string
	dsn          func(t *testing.T) string // crl's keys in it
	dialector    func(dsn string) gorm.Dialector
}

// keys are crl's keys that every family's DSN below carries.
const keys = "retryExec={1205,1213,40P01:2,10ms}&connectRetryCount=2&retryJitter=none"

var servers = []server{
	{name: "sqlserver", driver: "sqlserver",
		dsn: func(t *testing.T) string {
			srv := mssqltest.NewServer(t)
			srv.Handle("SELECT 1", mssqltest.Rows([]string{"n"}, []any{int64(1)}))
			return srv.DSN() + "&" + keys
		},
		dialector: func(dsn string) gorm.Dialector { return gormsqlserver.Open(dsn) }},
	{name: "mariadb", driver: "mysql", dsn: func(t *testing.T) string { return realDSN(t, "mariadb") },
		dialector: func(dsn string) gorm.Dialector { return gormmysql.Open(dsn) }},
	{name: "postgres", driver: "pgx", dsn: func(t *testing.T) string { return realDSN(t, "postgres") },
		dialector: func(dsn string) gorm.Dialector { return gormpostgres.Open(dsn) }},
}

// realDSN returns the DSN of the real database named name
// (conformance.DatabaseNamed) with crl's keys added, or skips.
func realDSN(t *testing.T, name string) string {
	t.Helper()
	dsn := conformance.DatabaseNamed(t, name).DSN
	if strings.Contains(dsn, "?") {
		return dsn + "&" + keys
	}
	return dsn + "?" + keys
}

// openers are every way crl opens a pool; each returns the pool over the
// DSN (for a connector of one's own: the driver's connector for the DSN
// without crl's keys).
var openers = []struct {
	name string
	open func(t *testing.T, s server, dsn string) *sql.DB
}{
	{"crl.Open", func(t *testing.T, s server, dsn string) *sql.DB {
		db, err := crl.Open(s.driver, dsn)
		require.NoError(t, err)
		return db
	}},
	{"crl.Register", func(t *testing.T, s server, dsn string) *sql.DB {
		name, err := crl.Register(s.driver)
		require.NoError(t, err)
		db, err := sql.Open(name, dsn)
		require.NoError(t, err)
		return db
	}},
	{"crl.OpenDB", func(t *testing.T, s server, dsn string) *sql.DB {
		_, driverDSN, err := config.ParseDSN(s.driver, dsn)
		require.NoError(t, err)
		c, err := crl.DriverConnector(s.driver, driverDSN)
		require.NoError(t, err)
		db, err := crl.OpenDB(c, s.driver)
		require.NoError(t, err)
		return db
	}},
	{"sqlxcrl.Open", func(t *testing.T, s server, dsn string) *sql.DB {
		db, err := sqlxcrl.Open(s.driver, dsn)
		require.NoError(t, err)
		return db.DB.DB
	}},
	{"gormcrl.Open", func(t *testing.T, s server, dsn string) *sql.DB {
		db, err := gorm.Open(gormcrl.Open(s.dialector(dsn)), &gorm.Config{Logger: logger.Discard})
		require.NoError(t, err)
		sqlDB, err := db.DB()
		require.NoError(t, err)
		return sqlDB
	}},
}

// selectOne runs SELECT 1 on conn, below database/sql.
func selectOne(t *testing.T, conn driver.Conn) {
	t.Helper()
	stmt, err := conn.Prepare("SELECT 1")
	require.NoError(t, err)
	defer stmt.Close()
	q, ok := stmt.(driver.StmtQueryContext)
	require.True(t, ok, "the layer's statement %T", stmt)
	rows, err := q.QueryContext(context.Background(), nil)
	require.NoError(t, err)
	defer rows.Close()
	dest := make([]driver.Value, 1)
	require.NoError(t, rows.Next(dest))
	assert.EqualValues(t, 1, dest[0])
}

// TestDriverOpensTheDSNOfItsPool: DB.Driver's Open and OpenConnector,
// given the DSN that opened the pool (crl's keys in it), read it as crl.Open
// does and hand the driver the DSN without crl's keys, on every family and
// for every way crl opens a pool. Passed on, MariaDB answers retryExec's SET
// with 1064 and PostgreSQL refuses the unknown startup parameter.
func TestDriverOpensTheDSNOfItsPool(t *testing.T) {
	for _, s := range servers {
		for _, o := range openers {
			t.Run(s.name+"/"+o.name, func(t *testing.T) {
				dsn := s.dsn(t)
				db := o.open(t, s, dsn)
				defer db.Close()
				require.NoError(t, db.Ping(), "the pool")

				conn, err := db.Driver().Open(dsn)
				require.NoError(t, err, "Driver().Open")
				selectOne(t, conn)
				require.NoError(t, conn.Close())

				dc, ok := db.Driver().(driver.DriverContext)
				require.True(t, ok, "the layer's Driver is a driver.DriverContext")
				c, err := dc.OpenConnector(dsn)
				require.NoError(t, err, "OpenConnector")
				other := sql.OpenDB(c)
				defer other.Close()
				var n int
				require.NoError(t, other.QueryRow("SELECT 1").Scan(&n))
				assert.Equal(t, 1, n)
				rt, ok := crl.RuntimeOf(other)
				require.True(t, ok, "a pool of the layer")
				assert.Equal(t, "{1205,1213,40P01:2,10ms}", rt.Config().RetryExec, "the DSN's rules")
			})
		}
	}
}

// TestDriverReadsADSNAsCrlOpenDoes: a DSN given to the pool's Driver is
// read like crl.Open's: the pool's options in code win over its keys, its
// keys over the defaults, and the new pool's statements run under them.
func TestDriverReadsADSNAsCrlOpenDoes(t *testing.T) {
	const update = "UPDATE accounts SET balance = 0 WHERE id = 1"
	for _, tc := range []struct {
		name       string
		opts       []crl.Option
		params     string
		executions int
	}{
		{"the DSN's rules", nil, "&retryExec={1205:1,0}", 2},
		{"the default rule, not the pool's DSN's rules", nil, "", 4},
		{"code over the DSN", []crl.Option{crl.WithRetryExec("{1205:2,0}")}, "&retryExec={1205:1,0}", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mssqltest.NewServer(t)
			clock := coretest.NewClock(time.Time{}) // an option in code the new pool takes too
			db, err := crl.Open("sqlserver", srv.DSN()+"&retryExec={1205:4,0}", append(tc.opts, config.WithClock(clock))...)
			require.NoError(t, err)
			defer db.Close()
			c, err := db.Driver().(driver.DriverContext).OpenConnector(srv.DSN() + tc.params)
			require.NoError(t, err)
			other := sql.OpenDB(c)
			defer other.Close()
			srv.Handle(update, mssqltest.Error(1205))
			_, err = other.Exec(update)
			require.Error(t, err)
			assert.Equal(t, tc.executions, srv.Count(update))
			assert.Len(t, clock.Sleeps(), tc.executions-1, "the pool's clock")
		})
	}
}

// TestDriverRefusesABadCrlKey: a near-miss of a crl key or a malformed
// value in a DSN given to the pool's Driver is an error naming the key,
// never passed on to the driver, and no error quotes the password.
func TestDriverRefusesABadCrlKey(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, err := crl.Open("sqlserver", srv.DSN())
	require.NoError(t, err)
	defer db.Close()
	secret := strings.Replace(srv.DSN(), "sa:pass@", "sa:s3cr3t-pw@", 1)
	for _, tc := range []struct{ params, key string }{
		{"&retryExecc={1205:1,0}", "retryExecc"},
		{"&retryExec={1205:x,0}", "retryExec"},
		{"&connectRetryCount=300", "connectRetryCount"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			before := srv.Logins()
			_, err := db.Driver().Open(secret + tc.params)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.key)
			assert.NotContains(t, err.Error(), "s3cr3t-pw")
			_, err = db.Driver().(driver.DriverContext).OpenConnector(secret + tc.params)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.key)
			assert.NotContains(t, err.Error(), "s3cr3t-pw")
			assert.Equal(t, before, srv.Logins(), "nothing reached the server")
		})
	}
}

// countingConnector counts the logins of the connector below.
type countingConnector struct {
	driver.Connector
	logins atomic.Int32
}

func (c *countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	c.logins.Add(1)
	return c.Connector.Connect(ctx)
}

// TestALoginErrorNoRuleNamesRunsOnce: MariaDB answers a session setting it
// rejects (a DSN parameter that go-sql-driver/mysql sends as SET) with a
// syntax error, 1064, at every login. No rule names it: one login, and the
// caller gets the driver's own *mysql.MySQLError, not "not retryable after
// 2 attempts".
func TestALoginErrorNoRuleNamesRunsOnce(t *testing.T) {
	dsn := os.Getenv("CRL_MYSQL_DSN")
	if dsn == "" {
		t.Skip("CRL_MYSQL_DSN is not set")
	}
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["crl_drvopen_bogus"] = "{x}"
	inner, err := mysql.NewConnector(cfg)
	require.NoError(t, err)
	c := &countingConnector{Connector: inner}
	db, err := crl.OpenDB(c, "mysql", config.WithConnectRetryCount(3))
	require.NoError(t, err)
	defer db.Close()
	err = db.Ping()
	var me *mysql.MySQLError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, uint16(1064), me.Number)
	assert.IsType(t, &mysql.MySQLError{}, err, "the driver's own error: err = %v", err)
	assert.EqualValues(t, 1, c.logins.Load(), "logins")
}
