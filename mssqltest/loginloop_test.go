package mssqltest_test

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/mssqltest"
)

// connectLoop runs core's connection algorithm around the real go-mssqldb
// connector, on a virtual clock (the waits return at once and are
// recorded), and returns the clock, the attempts made and the error.
func connectLoop(t *testing.T, dsn string, p core.Policy) (*coretest.Clock, int, error) {
	t.Helper()
	connector, err := mssql.NewConnector(dsn)
	require.NoError(t, err)
	clock := coretest.NewClock(time.Time{})
	r, err := core.NewRetrier(p, core.Options{Clock: clock})
	require.NoError(t, err)
	attempts := 0
	err = r.Connect(context.Background(), func(ctx context.Context) error {
		attempts++
		conn, err := connector.Connect(ctx)
		if err == nil {
			return conn.Close()
		}
		return err
	})
	return clock, attempts, err
}

// TestLoginLoopOverTDS: the JDBC driver's login loop inside its connection
// loop, with the real driver over TCP: a persistent 40613 gets 4 logins
// with the defaults, a dropped login is tried again, a wrong password is
// not, a server error that no rule names gets the login loop's retry
// alone, and a refused connection (10061) is tried again by the login
// loop.
func TestLoginLoopOverTDS(t *testing.T) {
	t.Run("persistent 40613: 4 logins", func(t *testing.T) {
		srv := mssqltest.NewServer(t)
		srv.FailLogin(40613, 100)
		clock, _, err := connectLoop(t, srv.DSN(), core.Policy{})
		var me mssql.Error
		require.ErrorAs(t, err, &me)
		assert.Equal(t, int32(40613), me.Number)
		assert.ErrorIs(t, err, core.ErrRetriesExhausted)
		assert.Equal(t, 4, srv.Logins())
		assert.Equal(t, []time.Duration{0, 0, 0}, clock.Sleeps())
	})
	t.Run("40613 three times, then in", func(t *testing.T) {
		srv := mssqltest.NewServer(t)
		srv.FailLogin(40613, 3)
		_, _, err := connectLoop(t, srv.DSN(), core.Policy{})
		require.NoError(t, err)
		assert.Equal(t, 4, srv.Logins())
	})
	t.Run("count 3: waits of the login loop", func(t *testing.T) {
		srv := mssqltest.NewServer(t)
		srv.FailLogin(40613, 100)
		clock, _, err := connectLoop(t, srv.DSN(), core.Policy{ConnectRetryCount: 3})
		assert.ErrorIs(t, err, core.ErrLoginTimeout)
		assert.Equal(t, 4, srv.Logins())
		assert.Equal(t, coretest.Seconds(0, 10, 10), clock.Sleeps())
	})
	t.Run("a dropped login is tried again", func(t *testing.T) {
		srv := mssqltest.NewServer(t)
		srv.DropLogins(1)
		_, _, err := connectLoop(t, srv.DSN(), core.Policy{})
		require.NoError(t, err)
		assert.Equal(t, 2, srv.Logins())
	})
	t.Run("dropped every time: the login loop only", func(t *testing.T) {
		srv := mssqltest.NewServer(t)
		srv.DropLogins(100)
		_, _, err := connectLoop(t, srv.DSN(), core.Policy{})
		require.Error(t, err)
		assert.ErrorIs(t, err, core.ErrNotRetryable)
		assert.Equal(t, 2, srv.Logins())
	})
	t.Run("dropped, then 40613, then in", func(t *testing.T) {
		srv := mssqltest.NewServer(t)
		srv.DropLogins(1)
		srv.FailLogin(40613, 1)
		_, _, err := connectLoop(t, srv.DSN(), core.Policy{})
		require.NoError(t, err)
		assert.Equal(t, 3, srv.Logins())
	})
	t.Run("login failed is fatal", func(t *testing.T) {
		srv := mssqltest.NewServer(t)
		srv.FailLogin(18456, 100)
		_, _, err := connectLoop(t, srv.DSN(), core.Policy{ConnectRetryCount: 5})
		var me mssql.Error
		require.ErrorAs(t, err, &me)
		assert.Equal(t, int32(18456), me.Number)
		assert.Equal(t, 1, srv.Logins())
	})
	t.Run("an error no rule names: the login loop's retry only, as JDBC's", func(t *testing.T) {
		srv := mssqltest.NewServer(t)
		srv.FailLogin(4064, 100)
		clock, _, err := connectLoop(t, srv.DSN(), core.Policy{})
		var me mssql.Error
		require.ErrorAs(t, err, &me)
		assert.Equal(t, int32(4064), me.Number)
		assert.ErrorIs(t, err, core.ErrNotRetryable, "the connection loop does not retry it")
		assert.Equal(t, 2, srv.Logins())
		assert.Equal(t, []time.Duration{0}, clock.Sleeps())
	})
	t.Run("4060 named by retryConn: both loops retry it", func(t *testing.T) {
		srv := mssqltest.NewServer(t)
		srv.FailLogin(4060, 3)
		conn, err := core.ParseConnectionRules("{+4060}")
		require.NoError(t, err)
		clock, _, err := connectLoop(t, srv.DSN(), core.Policy{Connection: conn})
		require.NoError(t, err)
		assert.Equal(t, 4, srv.Logins())
		assert.Equal(t, []time.Duration{0, 0, 0}, clock.Sleeps())
	})
	t.Run("a list that replaces the builtin one: 40613 gets the login loop's retry alone", func(t *testing.T) {
		srv := mssqltest.NewServer(t)
		srv.FailLogin(40613, 100)
		conn, err := core.ParseConnectionRules("{4060}")
		require.NoError(t, err)
		_, _, err = connectLoop(t, srv.DSN(), core.Policy{Connection: conn})
		var me mssql.Error
		require.ErrorAs(t, err, &me)
		assert.Equal(t, int32(40613), me.Number)
		assert.Equal(t, 2, srv.Logins())
	})
	t.Run("refused (10061): the login loop retries it", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		_, attempts, err := connectLoop(t, "sqlserver://sa:pass@"+addr+"?encrypt=disable&dial+timeout=2", core.Policy{})
		require.Error(t, err)
		assert.True(t, errors.Is(err, syscall.ECONNREFUSED), "err = %v", err)
		n, ok := core.ErrorNumber(err)
		assert.True(t, ok)
		assert.Equal(t, int32(10061), n)
		assert.Equal(t, 2, attempts)
	})
}
