package pgxcrl_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core/coretest"
)

func TestSendBatchRunsOnce(t *testing.T) {
	a := admin(t)
	f := newFault(t, a)
	tbl := table(t, a, "batch", "v int")
	p := open(t, "retryExec={40P01:3,10ms}", config.WithClock(coretest.NewClock(time.Time{})))
	b := &pgx.Batch{}
	b.Queue("INSERT INTO " + tbl + " VALUES (1)")
	b.Queue("SELECT " + f.call("40P01", 1))
	br := p.SendBatch(context.Background(), b)
	_, err := br.Exec()
	require.NoError(t, err)
	_, err = br.Exec()
	assert.Equal(t, "40P01", sqlState(err))
	assert.Equal(t, "40P01", sqlState(br.Close()), "Close reports the batch's error too")
	assert.Equal(t, int64(1), f.calls(t))
	assert.Equal(t, int64(0), count(t, a, "SELECT count(*) FROM "+tbl), "the batch's implicit transaction rolled back")
	assert.Equal(t, int32(0), p.Stat().AcquiredConns())
}

func TestCopyFrom(t *testing.T) {
	a := admin(t)
	tbl := table(t, a, "copy", "v int")
	p := open(t, "")
	n, err := p.CopyFrom(context.Background(), pgx.Identifier{tbl}, []string{"v"}, pgx.CopyFromRows([][]any{{1}, {2}, {3}}))
	require.NoError(t, err)
	assert.Equal(t, int64(3), n)
	assert.Equal(t, int64(3), count(t, a, "SELECT count(*) FROM "+tbl))
	assert.Equal(t, int32(0), p.Stat().AcquiredConns())
}
