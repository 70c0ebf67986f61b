package gormcrl_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/gormcrl"
	"github.com/crl-go/crl/mssqltest"
)

func TestOpenLeavesTheDriversOwnDialector(t *testing.T) {
	s := mssqltest.NewServer(t)
	orig := sqlserver.Open(s.DSN() + "&retryExec={1205:1,5ms}")
	wrapped := gormcrl.Open(orig, config.WithClock(coretest.NewClock(time.Time{})))
	db, err := gorm.Open(wrapped, &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)

	d, ok := db.Dialector.(*sqlserver.Dialector)
	require.True(t, ok, "db.Dialector is %T, want *sqlserver.Dialector", db.Dialector)
	assert.NotNil(t, d.Conn, "the dialector's Conn is the retrying pool")
	assert.NotContains(t, d.DSN, "retryExec", "the driver's DSN has no retry key")
	_, registered := db.Plugins[gormcrl.PluginName]
	assert.True(t, registered, "the plugin is registered")

	od := orig.(*sqlserver.Dialector)
	assert.Nil(t, od.Conn, "the caller's dialector is not changed")
	assert.Contains(t, od.DSN, "retryExec", "the caller's DSN is not changed")

	// The same wrapped dialector opens a second DB with a pool of its own.
	db2, err := gorm.Open(wrapped, &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	assert.NotSame(t, d, db2.Dialector, "each gorm.Open gets its own copy")

	s.Handle(selectFirst, mssqltest.Error(1205), orderRow(7, "pen"))
	var o Order
	require.NoError(t, db.First(&o, 7).Error)
	assert.Equal(t, 2, s.Count(selectFirst), "retried once")
}

func TestOpenNilDialector(t *testing.T) {
	var d *sqlserver.Dialector
	_, err := gorm.Open(gormcrl.Open(d), &gorm.Config{Logger: logger.Discard})
	assert.ErrorContains(t, err, "gormcrl: Open: the dialector is nil")
}

// A first attempt that is not retried is logged once, by GORM, at the
// caller's line.
func TestLogNamesTheCallersLine(t *testing.T) {
	s := mssqltest.NewServer(t)
	var buf bytes.Buffer
	lg := logger.New(logWriter{&buf}, logger.Config{LogLevel: logger.Info, Colorful: false})
	db, _ := open(t, s, &gorm.Config{Logger: lg}, gormcrl.WithRetryExec(deadlockRules))
	s.Handle("BEGIN TRANSACTION", mssqltest.Affected(0))
	s.Handle(insertOrder, mssqltest.Error(2627)) // no rule: not retried
	buf.Reset()
	err := db.Create(&Order{Name: "pen"}).Error
	require.Error(t, err)
	out := buf.String()
	assert.Contains(t, out, "dialector_test.go:", "the log names this file")
	assert.NotContains(t, out, "unit.go", "the log does not name gormcrl's file")
	assert.Equal(t, 1, strings.Count(out, "INSERT INTO"), "the attempt is logged once:\n%s", out)
}

// A retried operation is logged once, by GORM's processor of the
// operation, at the caller's line, with the last attempt's text, rows and
// error: a statement the driver layer retried (its attempts are below what
// GORM sees) and a unit re-run alike. The failed attempts are the
// observer's events.
func TestLogOfRetriedOperationNamesTheCaller(t *testing.T) {
	for _, tc := range []struct {
		name, query string
		run         func(db *gorm.DB, s *mssqltest.Server) (int, error) // the caller's line, and the error
	}{
		{"unit", insertOrder, func(db *gorm.DB, s *mssqltest.Server) (int, error) {
			s.Handle(insertOrder, mssqltest.Error(1205), mssqltest.Error(1205), idRow(8))
			_, _, line, _ := runtime.Caller(0)
			return line + 1, db.Create(&Order{Name: "pen"}).Error
		}},
		{"read", selectFirst, func(db *gorm.DB, s *mssqltest.Server) (int, error) {
			s.Handle(selectFirst, mssqltest.Error(1205), mssqltest.Error(1205), orderRow(7, "pen"))
			var o Order
			_, _, line, _ := runtime.Caller(0)
			return line + 1, db.First(&o, 7).Error
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mssqltest.NewServer(t)
			var buf bytes.Buffer
			lg := logger.New(logWriter{&buf}, logger.Config{LogLevel: logger.Info, Colorful: false})
			db, _ := open(t, s, &gorm.Config{Logger: lg}, gormcrl.WithRetryExec(deadlockRules))
			s.Handle("BEGIN TRANSACTION", mssqltest.Affected(0))
			buf.Reset()
			line, err := tc.run(db, s)
			require.NoError(t, err)
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			require.Len(t, lines, 2, "a file line, then the statement:\n%s", buf.String())
			assert.Contains(t, lines[0], fmt.Sprintf("dialector_test.go:%d", line), "the caller's line")
			assert.NotContains(t, lines[1], "crl", "as GORM logs any statement")
			assert.Contains(t, lines[1], "[rows:1]")
			assert.Equal(t, 3, s.Count(tc.query), "attempts")
		})
	}
}

type logWriter struct{ b *bytes.Buffer }

func (w logWriter) Printf(format string, args ...any) {
	w.b.WriteString(strings.TrimSpace(fmt.Sprintf(format, args...)) + "\n")
}

// Against real servers, db.Dialector is the driver's own type, so code that
// type-asserts it (GORM's generics preloads do) works.
func TestOpenKeepsTheDialectorTypeOnRealServers(t *testing.T) {
	t.Run("mysql", func(t *testing.T) {
		dsn := os.Getenv("CRL_MYSQL_DSN")
		if dsn == "" {
			t.Skip("CRL_MYSQL_DSN not set")
		}
		db, err := gorm.Open(gormcrl.Open(mysql.Open(dsn+"&retryExec={1213:2,10ms}")), &gorm.Config{Logger: logger.Discard})
		require.NoError(t, err)
		d, ok := db.Dialector.(*mysql.Dialector)
		require.True(t, ok, "db.Dialector is %T", db.Dialector)
		assert.NotEmpty(t, d.ServerVersion, "Initialize read the server version through the retrying pool")
		var n int
		require.NoError(t, db.Raw("SELECT 1").Scan(&n).Error)
		assert.Equal(t, 1, n)
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := os.Getenv("CRL_POSTGRES_DSN")
		if dsn == "" {
			t.Skip("CRL_POSTGRES_DSN not set")
		}
		db, err := gorm.Open(gormcrl.Open(postgres.New(postgres.Config{DSN: dsn + "&retryExec={40P01:2,10ms}", PreferSimpleProtocol: true})),
			&gorm.Config{Logger: logger.Discard})
		require.NoError(t, err)
		d, ok := db.Dialector.(*postgres.Dialector)
		require.True(t, ok, "db.Dialector is %T", db.Dialector)
		assert.Contains(t, d.DSN, "default_query_exec_mode=simple_protocol", "PreferSimpleProtocol reaches pgx")
		var n int
		require.NoError(t, db.Raw("SELECT 1").Scan(&n).Error)
		assert.Equal(t, 1, n)

		_, err = gorm.Open(gormcrl.Open(postgres.New(postgres.Config{DSN: dsn + "&default_query_exec_mode=exec", PreferSimpleProtocol: true})),
			&gorm.Config{Logger: logger.Discard})
		assert.ErrorContains(t, err, "PreferSimpleProtocol", "a conflict is an error, not a silent choice")
	})
}

// TestWhatAProgramLinks builds the smallest GORM program on SQL Server with
// and without gormcrl: the same database/sql drivers are registered, and
// gormcrl adds less than 1.25 MB (about 1.1 MB: the driver layer's
// connection types, one per set of the optional interfaces database/sql
// looks at, and its reading of transactions begun as statement text, are
// the latest part of it).
func TestWhatAProgramLinks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two programs")
	}
	goBin := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	dir := t.TempDir()
	build := func(name string, tags ...string) (string, int64) {
		bin := filepath.Join(dir, name)
		args := append([]string{"build", "-o", bin}, tags...)
		cmd := exec.CommandContext(context.Background(), goBin, append(args, "./testdata/sqlserverapp")...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go build: %s", out)
		fi, err := os.Stat(bin)
		require.NoError(t, err)
		run, err := exec.Command(bin).Output()
		require.NoError(t, err, "run %s", name)
		return strings.TrimSpace(string(run)), fi.Size()
	}
	plainDrivers, plainSize := build("plain")
	crlDrivers, crlSize := build("withcrl", "-tags", "withcrl")
	assert.Equal(t, plainDrivers, crlDrivers, "sql.Drivers() with gormcrl")
	assert.NotContains(t, crlDrivers, "mysql")
	assert.NotContains(t, crlDrivers, "pgx")
	t.Logf("binary: %d bytes plain, %d with gormcrl (+%d)", plainSize, crlSize, crlSize-plainSize)
	assert.Less(t, crlSize-plainSize, int64(5<<18), "gormcrl adds less than 1.25 MB")
}

// A dialector passed by value works as one passed by pointer.
func TestOpenValueDialector(t *testing.T) {
	s := mssqltest.NewServer(t)
	s.FailLogin(40613, 1)
	d := sqlserver.Dialector{Config: &sqlserver.Config{DSN: s.DSN() + "&retryExec={1205:1,5ms}"}}
	db, err := gorm.Open(gormcrl.Open(d, config.WithClock(coretest.NewClock(time.Time{}))), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err, "the failed login is retried")
	got, ok := db.Dialector.(sqlserver.Dialector)
	require.True(t, ok, "db.Dialector is %T, want sqlserver.Dialector", db.Dialector)
	assert.NotNil(t, got.Conn)
	assert.Nil(t, d.Conn, "the caller's Config is not changed")
	assert.Equal(t, 2, s.Logins())
}

// namedDialector has the fields of a dialector and a Name whose driver is
// not registered.
type namedDialector struct {
	gorm.Dialector
	DSN        string
	DriverName string
	Conn       gorm.ConnPool
}

func (namedDialector) Name() string { return "nosuchdb" }

func TestOpenWithoutTheDriverRegistered(t *testing.T) {
	_, err := gorm.Open(gormcrl.Open(namedDialector{Dialector: sqlserver.Open("sqlserver://h")}), &gorm.Config{Logger: logger.Discard})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `no database/sql driver named nosuchdb is registered`)
	assert.Contains(t, err.Error(), "set DriverName")
}
