package gormcrl_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/gormcrl"
	"github.com/crl-go/crl/internal/testsupport/resetproxy"
	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

// connectorHandle is one database handle opened over a user's connector
// by one of crl's three ways in.
type connectorHandle struct {
	ping  func(ctx context.Context) error
	exec  func(ctx context.Context, query string) error
	close func() error
}

// connectorWay opens a handle over c of the given family: driverName for
// sqlxcrl and config, dialector for gormcrl.
type connectorWay struct {
	name string
	open func(t *testing.T, c driver.Connector, driverName string, d gorm.Dialector, opts ...config.Option) connectorHandle
}

var connectorWays = []connectorWay{
	{"sqlxcrl.OpenDB", func(t *testing.T, c driver.Connector, driverName string, _ gorm.Dialector, opts ...config.Option) connectorHandle {
		db, err := sqlxcrl.OpenDB(c, driverName, opts...)
		require.NoError(t, err)
		return connectorHandle{
			ping:  db.PingContext,
			exec:  func(ctx context.Context, q string) error { _, err := db.ExecContext(ctx, q); return err },
			close: db.Close,
		}
	}},
	{"gormcrl.OpenDB", func(t *testing.T, c driver.Connector, _ string, d gorm.Dialector, opts ...config.Option) connectorHandle {
		db, err := gorm.Open(gormcrl.OpenDB(d, c, opts...), &gorm.Config{Logger: logger.Discard})
		require.NoError(t, err)
		sqlDB, err := db.DB()
		require.NoError(t, err)
		return connectorHandle{
			ping:  sqlDB.PingContext,
			exec:  func(ctx context.Context, q string) error { return db.WithContext(ctx).Exec(q).Error },
			close: sqlDB.Close,
		}
	}},
	{"crl.OpenDB", func(t *testing.T, c driver.Connector, driverName string, _ gorm.Dialector, opts ...config.Option) connectorHandle {
		db, err := crl.OpenDB(c, driverName, opts...)
		require.NoError(t, err)
		return connectorHandle{
			ping:  db.PingContext,
			exec:  func(ctx context.Context, q string) error { _, err := db.ExecContext(ctx, q); return err },
			close: db.Close,
		}
	}},
	{"sql.OpenDB(crl.WrapConnector)", func(t *testing.T, c driver.Connector, driverName string, _ gorm.Dialector, opts ...config.Option) connectorHandle {
		wrapped, rt, err := crl.WrapConnector(c, driverName, opts...)
		require.NoError(t, err)
		db := sql.OpenDB(wrapped)
		return connectorHandle{
			ping: db.PingContext,
			exec: func(ctx context.Context, q string) error {
				return rt.Retrier().Do(ctx, q, func(ctx context.Context) error {
					_, err := db.ExecContext(ctx, q)
					return err
				})
			},
			close: db.Close,
		}
	}},
}

// Over go-mssqldb's connectors (NewConnector, and the access-token
// provider connector an Azure SQL service with a managed identity uses)
// against mssqltest: a first login that fails with 40613 is retried by the
// login loop (connectRetryCount=1: 2 logins), and a deadlock (1205) by the
// statement rule, on the same handle.
func TestOpenDBSQLServerConnector(t *testing.T) {
	connectors := map[string]func(dsn string) (*mssql.Connector, error){
		"NewConnector": mssql.NewConnector,
		"NewConnectorWithAccessTokenProvider": func(dsn string) (*mssql.Connector, error) {
			return mssql.NewConnectorWithAccessTokenProvider(dsn, func(context.Context) (string, error) { return "token", nil })
		},
	}
	for cname, newConnector := range connectors {
		for _, w := range connectorWays {
			t.Run(cname+"/"+w.name, func(t *testing.T) {
				srv := mssqltest.NewServer(t)
				c, err := newConnector(srv.DSN())
				require.NoError(t, err)
				srv.FailLogin(40613, 1)
				h := w.open(t, c, "sqlserver", sqlserver.New(sqlserver.Config{}), gormcrl.WithRetryExec("{1205:1,0}"))
				defer h.close()
				require.NoError(t, h.ping(context.Background()), "the login loop retried the failed login")
				assert.Equal(t, 2, srv.Logins(), "logins: the JDBC algorithm's")

				const q = "UPDATE t SET n = n + 1"
				srv.Handle(q, mssqltest.Error(1205), mssqltest.Affected(1))
				require.NoError(t, h.exec(context.Background(), q))
				assert.Equal(t, 2, srv.Count(q), "the deadlock was retried")
			})
		}
	}
}

// Over go-sql-driver/mysql's mysql.NewConnector on MariaDB, through a
// proxy that resets the first two connections: the login loop retries the
// first reset at once (a network failure is retried inside login()); its
// one retry (connectRetryCount=1) used up, the connection loop retries the
// second only because retryConn names it (JDBC's connect() retries only
// server errors) — 3 logins — and a deadlock victim (1213) is retried by
// the statement rule on the same handle. The rule is {+badconn}, not
// {+10054}: a reset that arrives while the driver reads the server's
// greeting comes back as the driver's "invalid connection" (it logs the
// socket error and drops it), and badconn names both that and ECONNRESET.
func TestOpenDBMySQLConnector(t *testing.T) {
	dsn := os.Getenv("CRL_MYSQL_DSN")
	if dsn == "" {
		t.Skip("CRL_MYSQL_DSN not set")
	}
	cfg, err := gomysql.ParseDSN(dsn)
	require.NoError(t, err)
	admin, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	defer admin.Close()

	for i, w := range connectorWays {
		t.Run(w.name, func(t *testing.T) {
			query := deadlockOnceMySQL(t, admin, i)
			proxy := startResetProxy(t, cfg.Addr, nil)
			c, err := gomysql.NewConnector(withAddr(cfg, proxy.Addr()))
			require.NoError(t, err)
			proxy.Reset(2)
			h := w.open(t, c, "mysql", mysql.New(mysql.Config{}),
				gormcrl.WithRetryConn("{+badconn}"), gormcrl.WithRetryExec("{1213:1,0}"))
			defer h.close()
			require.NoError(t, h.ping(context.Background()), "the connection was retried")
			assert.Equal(t, 3, proxy.Logins(), "logins: 2 in the first login loop, 1 in the second")

			require.NoError(t, h.exec(context.Background(), query.sql), "the deadlock was retried")
			assert.Equal(t, 2, query.runs(t), "the statement ran twice")
		})
	}
}

// Over pgx's stdlib.GetConnector with a BeforeConnect (as a service that
// rotates IAM passwords has it) on PostgreSQL, through a proxy that resets
// the first two logins after their startup message: pgx reports
// ECONNRESET (10054), so retryConn={+10054} lets the connection loop
// retry the second; 3 logins, as for MySQL, each through BeforeConnect,
// and a deadlock (40P01) retried on the same handle. The proxy does not
// count the CancelRequest that pgx sends on a connection of its own after
// a failed login: it is no login.
func TestOpenDBPgxConnector(t *testing.T) {
	dsn := os.Getenv("CRL_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("CRL_POSTGRES_DSN not set")
	}
	admin, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	defer admin.Close()

	for i, w := range connectorWays {
		t.Run(w.name, func(t *testing.T) {
			query := deadlockOncePostgres(t, admin, i)
			cfg, err := pgx.ParseConfig(dsn)
			require.NoError(t, err)
			proxy := startResetProxy(t, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), resetproxy.PostgresLogin)
			host, port, err := net.SplitHostPort(proxy.Addr())
			require.NoError(t, err)
			p, err := strconv.Atoi(port)
			require.NoError(t, err)
			cfg.Host, cfg.Port = host, uint16(p)
			var before atomic.Int32
			c := stdlib.GetConnector(*cfg, stdlib.OptionBeforeConnect(func(_ context.Context, cc *pgx.ConnConfig) error {
				before.Add(1)
				cc.Password = "rotated" // what an IAM token provider would set; the test server trusts loopback
				return nil
			}))
			proxy.Reset(2)
			h := w.open(t, c, "pgx", postgres.New(postgres.Config{}),
				gormcrl.WithRetryConn("{+10054}"), gormcrl.WithRetryExec("{40P01:1,0}"))
			defer h.close()
			require.NoError(t, h.ping(context.Background()), "the connection was retried")
			assert.Equal(t, 3, proxy.Logins(), "logins: 2 in the first login loop, 1 in the second")
			assert.Equal(t, int32(3), before.Load(), "BeforeConnect ran for every login")

			require.NoError(t, h.exec(context.Background(), query.sql), "the deadlock was retried")
			assert.Equal(t, 2, query.runs(t), "the statement ran twice")
		})
	}
}

// OpenDB's errors come from gorm.Open: a nil connector, a nil dialector,
// a dialector that already has a Conn, a bad option.
func TestOpenDBErrors(t *testing.T) {
	srv := mssqltest.NewServer(t)
	c, err := mssql.NewConnector(srv.DSN())
	require.NoError(t, err)
	quiet := &gorm.Config{Logger: logger.Discard}

	_, err = gorm.Open(gormcrl.OpenDB(sqlserver.New(sqlserver.Config{}), nil), quiet)
	assert.ErrorContains(t, err, "connector is nil")
	_, err = gorm.Open(gormcrl.OpenDB(nil, c), quiet)
	assert.ErrorContains(t, err, "dialector is nil")
	pool := sql.OpenDB(c)
	defer pool.Close()
	_, err = gorm.Open(gormcrl.OpenDB(sqlserver.New(sqlserver.Config{Conn: pool}), c), quiet)
	assert.ErrorContains(t, err, "already has a Conn")
	_, err = gorm.Open(gormcrl.OpenDB(sqlserver.New(sqlserver.Config{}), c, gormcrl.WithRetryExec("{1205:300,1}")), quiet)
	assert.ErrorIs(t, err, core.ErrInvalidParameterNumber, "a retry count over 255")
	_, err = gorm.Open(gormcrl.OpenDB(sqlserver.New(sqlserver.Config{}), c, config.WithDriverFamily("oracle")), quiet)
	assert.ErrorIs(t, err, config.ErrInvalidValue)
	assert.Equal(t, 0, srv.Logins(), "no error reached the server")
}

// OpenDB leaves db.Dialector the driver's type, with the retrying pool as
// its Conn, and the plugin registered on the connector's Runtime.
func TestOpenDBLeavesTheDriversOwnDialector(t *testing.T) {
	srv := mssqltest.NewServer(t)
	c, err := mssql.NewConnector(srv.DSN())
	require.NoError(t, err)
	orig := sqlserver.New(sqlserver.Config{})
	db, err := gorm.Open(gormcrl.OpenDB(orig, c, config.WithDriverFamily("sqlserver")), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	defer func() {
		sqlDB, err := db.DB()
		require.NoError(t, err)
		require.NoError(t, sqlDB.Close())
	}()
	d, ok := db.Dialector.(*sqlserver.Dialector)
	require.True(t, ok, "db.Dialector is %T, want *sqlserver.Dialector", db.Dialector)
	assert.NotNil(t, d.Conn)
	assert.Nil(t, orig.(*sqlserver.Dialector).Conn, "the caller's dialector is not changed")
	p, ok := db.Plugins[gormcrl.PluginName].(*gormcrl.Plugin)
	require.True(t, ok, "the plugin is registered")
	assert.Equal(t, "sqlserver", p.Runtime().DriverFamily())
}

func startResetProxy(t *testing.T, target string, isLogin resetproxy.Classifier) *resetproxy.Proxy {
	t.Helper()
	p, err := resetproxy.Start(target, isLogin)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, p.Close()) })
	return p
}

func withAddr(cfg *gomysql.Config, addr string) *gomysql.Config {
	c := cfg.Clone()
	c.Net, c.Addr = "tcp", addr
	return c
}

// failingOnce is a statement that fails as a deadlock victim the first
// time it runs and succeeds afterwards; a sequence counts its runs, as a
// sequence is not rolled back with the failed statement.
type failingOnce struct {
	sql  string
	runs func(t *testing.T) int
}

func uniqueName(i int) string {
	return fmt.Sprintf("conn19_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1_000_000, i)
}

func deadlockOnceMySQL(t *testing.T, admin *sql.DB, i int) failingOnce {
	name := uniqueName(i)
	_, err := admin.Exec("CREATE SEQUENCE " + name + "_seq")
	require.NoError(t, err)
	_, err = admin.Exec("CREATE FUNCTION " + name + "_f() RETURNS INT NOT DETERMINISTIC MODIFIES SQL DATA BEGIN " +
		"IF NEXTVAL(" + name + "_seq) = 1 THEN SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213, " +
		"MESSAGE_TEXT = 'Deadlock found when trying to get lock; try restarting transaction'; END IF; RETURN 1; END")
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := admin.Exec("DROP FUNCTION " + name + "_f")
		assert.NoError(t, err)
		_, err = admin.Exec("DROP SEQUENCE " + name + "_seq")
		assert.NoError(t, err)
	})
	return failingOnce{sql: "SELECT " + name + "_f()", runs: func(t *testing.T) int {
		var n int
		require.NoError(t, admin.QueryRow("SELECT NEXTVAL("+name+"_seq) - 1").Scan(&n))
		return n
	}}
}

func deadlockOncePostgres(t *testing.T, admin *sql.DB, i int) failingOnce {
	name := uniqueName(i)
	_, err := admin.Exec("CREATE SEQUENCE " + name + "_seq")
	require.NoError(t, err)
	_, err = admin.Exec("CREATE FUNCTION " + name + "_f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN " +
		"IF nextval('" + name + "_seq') = 1 THEN RAISE EXCEPTION 'deadlock detected' USING ERRCODE = 'deadlock_detected'; END IF; " +
		"RETURN 1; END $$")
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := admin.Exec("DROP FUNCTION " + name + "_f()")
		assert.NoError(t, err)
		_, err = admin.Exec("DROP SEQUENCE " + name + "_seq")
		assert.NoError(t, err)
	})
	return failingOnce{sql: "SELECT " + name + "_f()", runs: func(t *testing.T) int {
		var n int
		require.NoError(t, admin.QueryRow("SELECT nextval('"+name+"_seq') - 1").Scan(&n))
		return n
	}}
}
