package sqlxcrl_test

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

// MustOpen and MustConnect are Open and Connect that panic on error, as
// sqlx's do.
func TestMustConstructors(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := sqlxcrl.MustConnect("sqlserver", srv.DSN()+"&retryExec={1205:1,0}")
	defer db.Close()
	srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
	_, err := db.Exec(update)
	require.NoError(t, err, "a MustConnect handle retries")
	assert.Equal(t, 2, srv.Count(update), "executions")

	opened := sqlxcrl.MustOpen("sqlserver", srv.DSN())
	assert.NoError(t, opened.Close())

	assert.Panics(t, func() { sqlxcrl.MustOpen("sqlserver", srv.DSN()+"&retryExec={1205:3,2AND2}") }, "MustOpen, bad rule")
	assert.Panics(t, func() { sqlxcrl.MustConnect("bogus", "hehe") }, "MustConnect, unknown driver")
	srv.FailLogin(18456, 1) // not transient: Connect's ping fails
	assert.Panics(t, func() { sqlxcrl.MustConnect("sqlserver", srv.DSN()) }, "MustConnect, refused login")
}

// sqlx's idiom for a second handle over the same pool, NewDb(db.DB, name),
// is NewDb(db.DB.DB, name) with a sqlxcrl handle (db.DB is the embedded
// *sqlx.DB; NewDb takes the *sql.DB, as DESIGN.md fixes it): the copy has a Mapper of its own, runs its statements under the statement
// loop with the options it is given, and its new connections under the
// connection loop of db's pool.
func TestNewDbOverTheEmbeddedHandle(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={1205:1,0}")
	upper := sqlxcrl.NewDb(db.DB.DB, db.DriverName(), sqlxcrl.WithRetryExec("{1205:1,0}"))
	upper.MapperFunc(strings.ToUpper)
	assert.NotSame(t, db.Mapper, upper.Mapper, "the copy's mapper is its own")
	assert.Same(t, db.DB.DB, upper.DB.DB, "the same pool")

	srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
	_, err := upper.Exec(update)
	require.NoError(t, err, "Exec on the copy")
	assert.Equal(t, 2, srv.Count(update), "executions: the copy retries")

	db.SetMaxIdleConns(0) // every statement opens a new connection
	before := srv.Logins()
	srv.FailLogin(40613, 1)
	_, err = upper.Exec("SELECT 1")
	require.NoError(t, err, "a new connection of the copy whose first login failed")
	assert.Equal(t, 2, srv.Logins()-before, "logins: the pool's connection loop")
}

// NewDb and WrapDB take a *sql.DB; a nil one is refused
// (its statements would panic), by WrapDB with the error, by NewDb with a
// DB whose every statement returns it. Over a pool crl did not open,
// WrapDB without settings runs each statement once; with settings it is
// refused, naming crl.OpenDB.
func TestWrapDB(t *testing.T) {
	srv := mssqltest.NewServer(t)
	raw, err := sql.Open("sqlserver", srv.DSN())
	require.NoError(t, err)
	defer raw.Close()

	_, err = sqlxcrl.WrapDB(raw, "sqlserver", sqlxcrl.WithRetryExec("{1205:1,0}"))
	assert.ErrorIs(t, err, sqlxcrl.ErrForeignPoolSettings)
	assert.ErrorContains(t, err, "crl.OpenDB")

	db, err := sqlxcrl.WrapDB(raw, "sqlserver")
	require.NoError(t, err)
	assert.Nil(t, db.Runtime(), "a pool crl did not open has no Runtime")
	srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
	_, err = db.Exec(update)
	mustNumber(t, err, 1205)
	assert.Equal(t, 1, srv.Count(update), "executions: once, as with sqlx alone")

	_, err = sqlxcrl.WrapDB(nil, "sqlserver")
	assert.ErrorIs(t, err, sqlxcrl.ErrNilPool, "WrapDB(nil *sql.DB)")
	db = sqlxcrl.NewDb(nil, "sqlserver")
	_, err = db.Exec(update)
	assert.ErrorIs(t, err, sqlxcrl.ErrNilPool, "Exec on NewDb(nil)")
	assert.ErrorIs(t, db.Ping(), sqlxcrl.ErrNilPool, "Ping on NewDb(nil)")
}
