package crltest_test

import (
	"context"
	"database/sql"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/crltest"
	"github.com/crl-go/crl/internal/tables/family"
	"github.com/crl-go/crl/mssqltest"
)

// classes are Deadlock and its siblings, by name.
var classes = []struct {
	name string
	of   func(string) error
}{
	{"deadlock", crltest.Deadlock},
	{"serialization", crltest.Serialization},
	{"lockTimeout", crltest.LockTimeout},
	{"failover", crltest.Failover},
	{"throttle", crltest.Throttle},
	{"cutoff", crltest.Cutoff},
}

// want is what each class's error is in each family: an SQL Server
// number, a MySQL number and SQLSTATE, a PostgreSQL SQLSTATE.
var want = map[string]struct {
	sqlServer      int32
	mysql, mariadb uint16
	mysqlState     string
	mariadbState   string
	postgres       string
}{
	"deadlock":      {1205, 1213, 1213, "40001", "40001", "40P01"},
	"serialization": {3960, 1213, 1213, "40001", "40001", "40001"},
	"lockTimeout":   {1222, 1205, 1205, "HY000", "HY000", "55P03"},
	"failover":      {40197, 1290, 1290, "HY000", "HY000", "25006"},
	"throttle":      {40501, 1040, 1040, "08004", "08004", "53300"},
	"cutoff":        {0, 3024, 1969, "HY000", "70100", "57014"},
}

func TestErrorsAreTheDriversOwn(t *testing.T) {
	for _, c := range classes {
		w := want[c.name]
		t.Run(c.name, func(t *testing.T) {
			for _, name := range []string{"sqlserver", "mssql", "AzureSQL"} {
				err := c.of(name)
				if w.sqlServer == 0 {
					assert.True(t, err == context.DeadlineExceeded, "%s: go-mssqldb's error when a statement's context ends", name)
					continue
				}
				me, ok := err.(mssql.Error) // a value, as go-mssqldb returns it
				require.True(t, ok, "%s: %T", name, err)
				assert.Equal(t, w.sqlServer, me.Number, name)
				assert.NotZero(t, me.Class, name)
				assert.NotEmpty(t, me.Message, name)
				assert.Contains(t, err.Error(), me.Message, name)
				assert.Equal(t, []mssql.Error{{Number: me.Number, Class: me.Class, State: me.State, Message: me.Message,
					ServerName: me.ServerName, LineNo: me.LineNo}}, me.All, "%s: All lists the one error, as the driver's does", name)
				n, ok := core.ErrorNumber(err)
				assert.True(t, ok && n == w.sqlServer, "%s: core reads %d", name, n)
			}
			for _, f := range []struct {
				name   string
				number uint16
				state  string
			}{{"mysql", w.mysql, w.mysqlState}, {"MySQL", w.mysql, w.mysqlState}, {"mariadb", w.mariadb, w.mariadbState}} {
				var me *mysql.MySQLError
				require.True(t, errors.As(c.of(f.name), &me), f.name)
				assert.Equal(t, f.number, me.Number, f.name)
				assert.Equal(t, f.state, string(me.SQLState[:]), f.name)
				assert.NotEmpty(t, me.Message, f.name)
				n, ok := core.ErrorNumber(me)
				assert.True(t, ok && n == int32(f.number), "%s: core reads %d", f.name, n)
			}
			for _, name := range []string{"postgres", "postgresql", "pgx", "pgx/v5"} {
				var pe *pgconn.PgError
				require.True(t, errors.As(c.of(name), &pe), name)
				assert.Equal(t, w.postgres, pe.Code, name)
				assert.Equal(t, w.postgres, pe.SQLState(), name)
				assert.Contains(t, []string{"ERROR", "FATAL"}, pe.Severity, name)
				assert.NotEmpty(t, pe.Message, name)
			}
		})
	}
}

func TestErrorsAreNewEachCall(t *testing.T) {
	for _, name := range []string{"sqlserver", "mysql", "postgres"} {
		first := crltest.Deadlock(name)
		switch e := first.(type) {
		case mssql.Error:
			e.All[0].Number = 1
		case *mysql.MySQLError:
			e.Number = 1
		case *pgconn.PgError:
			e.Code = "XXXXX"
		}
		n, _ := core.ErrorNumber(crltest.Deadlock(name))
		var pe *pgconn.PgError
		if errors.As(crltest.Deadlock(name), &pe) {
			assert.Equal(t, "40P01", pe.Code, name)
			continue
		}
		assert.Contains(t, []int32{1205, 1213}, n, "%s: a change to one value changed the next", name)
		if me, ok := crltest.Deadlock(name).(mssql.Error); ok {
			assert.Equal(t, int32(1205), me.All[0].Number, "%s: All is a new slice each call", name)
		}
	}
}

func TestErrorsOfAnUnknownFamily(t *testing.T) {
	for _, c := range classes {
		for _, name := range []string{"", "sqlite3", "oracle"} {
			err := c.of(name)
			require.ErrorIs(t, err, crltest.ErrUnknownFamily, "%s(%q)", c.name, name)
			assert.Contains(t, err.Error(), `"`+name+`"`, "names the name")
			assert.Contains(t, err.Error(), family.Spellings(), "names the names expected")
			assert.True(t, strings.HasPrefix(err.Error(), "crltest: "), err.Error())
		}
	}
}

// processID is the part of a message that names the session.
var processID = regexp.MustCompile(`Process ID \d+`)

// The SQL Server errors read as go-mssqldb returns the ones mssqltest
// sends, the server's name and the session's process ID aside.
func TestSQLServerErrorsReadAsTheDriverReturnsThem(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, err := sql.Open("sqlserver", srv.DSN())
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	for _, c := range classes {
		w := want[c.name]
		if w.sqlServer == 0 {
			continue
		}
		q := "UPDATE t SET " + c.name + " = 1"
		srv.Handle(q, mssqltest.Error(w.sqlServer))
		_, got := db.Exec(q)
		var sent mssql.Error
		require.True(t, errors.As(got, &sent), "%s: %v", c.name, got)
		injected := c.of("sqlserver").(mssql.Error)
		assert.Equal(t, "crltest", injected.ServerName, "%s: the server's name says where the error came from", c.name)
		injected.ServerName, injected.All = sent.ServerName, nil
		injected.Message = processID.ReplaceAllString(injected.Message, processID.FindString(sent.Message))
		sent.All = nil
		assert.Equal(t, sent, injected, c.name)
	}
}
