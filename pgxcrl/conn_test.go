package pgxcrl_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/pgxcrl"
)

func TestConnRetriesOnItsConnection(t *testing.T) {
	a := admin(t)
	f := newFault(t, a)
	tbl := table(t, a, "conn", "pid int")
	p := open(t, "retryExec={40P01:3,10ms}", config.WithClock(coretest.NewClock(time.Time{})))
	ctx := context.Background()
	c, err := p.Acquire(ctx)
	require.NoError(t, err)
	defer c.Release()
	var pid int32
	require.NoError(t, c.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid))
	_, err = c.Exec(ctx, "INSERT INTO "+tbl+" SELECT pg_backend_pid() * "+f.call("40P01", 2))
	require.NoError(t, err)
	assert.Equal(t, int64(3), f.calls(t))
	assert.Equal(t, int64(pid), count(t, a, "SELECT pid FROM "+tbl), "every attempt on the acquired connection")
	assert.Equal(t, int32(1), p.Stat().AcquiredConns())

	rows, err := c.Query(ctx, "SELECT "+f.call("40P01", 4))
	require.NoError(t, err)
	rows.Close()
	assert.Equal(t, int64(5), f.calls(t))
	assert.Equal(t, int32(1), p.Stat().AcquiredConns(), "the Conn's rows do not release the Conn")
}

func TestAcquireFunc(t *testing.T) {
	a := admin(t)
	f := newFault(t, a)
	p := open(t, "retryExec={40001:3,10ms}", config.WithClock(coretest.NewClock(time.Time{})))
	err := p.AcquireFunc(context.Background(), func(c *pgxcrl.Conn) error {
		var v int
		return c.QueryRow(context.Background(), "SELECT "+f.call("40001", 1)).Scan(&v)
	})
	require.NoError(t, err)
	assert.Equal(t, int64(2), f.calls(t))
	assert.Equal(t, int32(0), p.Stat().AcquiredConns())
}
