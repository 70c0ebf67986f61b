package pgxcrl_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/pgxcrl"
)

// A statement refused by a server that went read-only (25006, of the
// class failover) takes its connection out of the pool, as the driver
// layer's does (docs/semantics.md, Failover): a rule that names failover
// runs it again on a new connection, and the pool never hands the
// refused one out again; the connection of a transaction, a batch or a
// COPY, which are not retried on their own, is closed when it ends, and
// an acquired Conn's at its Release. The pool has one connection, put in read-only mode
// for each case (default_transaction_read_only: the session's server
// refuses writes, as a demoted primary does).
func TestFailoverTakesTheConnectionOutOfThePool(t *testing.T) {
	a := admin(t)
	tbl := table(t, a, "failover", "id int PRIMARY KEY")
	p := open(t, "pool_max_conns=1&retryExec={failover:2,10ms*1}")
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		write func(id int) error
	}{
		{"Exec", func(id int) error { _, err := p.Exec(ctx, "INSERT INTO "+tbl+" VALUES ($1)", id); return err }},
		{"QueryRow", func(id int) error {
			return p.QueryRow(ctx, "INSERT INTO "+tbl+" VALUES ($1) RETURNING id", id).Scan(&id)
		}},
		{"Query", func(id int) error {
			rows, err := p.Query(ctx, "INSERT INTO "+tbl+" VALUES ($1) RETURNING id", id)
			if err == nil {
				rows.Close()
			}
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := len(c.name)
			before := readOnlySession(t, p)
			require.NoError(t, c.write(id), "refused with 25006, then run on a new connection")
			assert.NotEqual(t, before, backend(t, p), "another backend")
			assert.Equal(t, int64(1), count(t, a, "SELECT count(*) FROM "+tbl+" WHERE id = $1", id), "applied once")
			requireGone(t, a, before)
		})
	}
	t.Run("SendBatch", func(t *testing.T) {
		before := readOnlySession(t, p)
		b := &pgx.Batch{}
		b.Queue("INSERT INTO " + tbl + " VALUES (200)")
		br := p.SendBatch(ctx, b)
		_, err := br.Exec()
		assert.Equal(t, "25006", sqlState(err), "a batch is not retried on its own")
		assert.Error(t, br.Close())
		assert.NotEqual(t, before, backend(t, p), "the batch's connection left the pool when its results closed")
		requireGone(t, a, before)
	})
	t.Run("CopyFrom", func(t *testing.T) {
		before := readOnlySession(t, p)
		_, err := p.CopyFrom(ctx, pgx.Identifier{tbl}, []string{"id"}, pgx.CopyFromRows([][]any{{300}}))
		assert.Equal(t, "25006", sqlState(err), "a COPY is not retried on its own")
		assert.NotEqual(t, before, backend(t, p), "the COPY's connection left the pool")
		requireGone(t, a, before)
	})
	for _, c := range []struct {
		name  string
		write func(c *pgxcrl.Conn) error
	}{
		{"Conn", func(c *pgxcrl.Conn) error { _, err := c.Exec(ctx, "INSERT INTO "+tbl+" VALUES (400)"); return err }},
		{"Conn's SendBatch", func(c *pgxcrl.Conn) error {
			b := &pgx.Batch{}
			b.Queue("INSERT INTO " + tbl + " VALUES (402)")
			br := c.SendBatch(ctx, b)
			_, err := br.Exec()
			assert.Error(t, br.Close())
			return err
		}},
		{"Conn's CopyFrom", func(c *pgxcrl.Conn) error {
			_, err := c.CopyFrom(ctx, pgx.Identifier{tbl}, []string{"id"}, pgx.CopyFromRows([][]any{{403}}))
			return err
		}},
		{"Conn's transaction", func(c *pgxcrl.Conn) error {
			tx, err := c.Begin(ctx)
			require.NoError(t, err)
			_, err = tx.Exec(ctx, "INSERT INTO "+tbl+" VALUES (401)")
			require.NoError(t, tx.Rollback(ctx))
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := readOnlySession(t, p)
			conn, err := p.Acquire(ctx)
			require.NoError(t, err)
			assert.Equal(t, "25006", sqlState(c.write(conn)), "the caller's connection is not replaced: refused on it every time")
			assert.False(t, conn.Conn().IsClosed(), "the caller's until its Release")
			conn.Release()
			assert.NotEqual(t, before, backend(t, p), "the Conn's connection left the pool at its Release")
			requireGone(t, a, before)
		})
	}
	t.Run("transaction", func(t *testing.T) {
		before := readOnlySession(t, p)
		tx := begin(t, ctx, p, pgx.TxOptions{})
		_, err := tx.Exec(ctx, "INSERT INTO "+tbl+" VALUES (100)")
		assert.Equal(t, "25006", sqlState(err), "a transaction's statement is not retried alone")
		require.NoError(t, tx.Rollback(ctx))
		assert.NotEqual(t, before, backend(t, p), "the transaction's connection left the pool when it ended")
		requireGone(t, a, before)
	})
}

// readOnlySession puts the pool's one connection in read-only mode and
// returns its backend's pid.
func readOnlySession(t *testing.T, p *pgxcrl.Pool) int32 {
	t.Helper()
	_, err := p.Exec(context.Background(), "SET SESSION default_transaction_read_only = on")
	require.NoError(t, err)
	return backend(t, p)
}

// backend returns the pid of the backend of the pool's next connection.
func backend(t *testing.T, p *pgxcrl.Pool) int32 {
	t.Helper()
	var pid int32
	require.NoError(t, p.QueryRow(context.Background(), "SELECT pg_backend_pid()").Scan(&pid))
	return pid
}

// requireGone waits until the backend pid has ended.
func requireGone(t *testing.T, a *pgxpool.Pool, pid int32) {
	t.Helper()
	require.Eventually(t, func() bool {
		return count(t, a, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid) == 0
	}, 5*time.Second, 20*time.Millisecond, "the refused backend is gone")
}
