package crl_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/internal/testsupport/optdriver"
	"github.com/crl-go/crl/mssqltest"
)

// A query's rows are the connection's own while no other rows of it are
// open; rows opened meanwhile (two queries open at once on a sql.Conn)
// are rows of their own, and each reads its own first row. The second
// round runs on what the first released.
func TestRowsOpenTogetherOnOneConnection(t *testing.T) {
	d := optdriver.New(optdriver.QueryerContext|optdriver.ConnBeginTx, 0, false)
	db, err := crl.OpenDB(d, "optdriver", crl.WithRetryExec("{1205:3,0}"))
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	c, err := db.Conn(ctx)
	require.NoError(t, err)
	defer c.Close()
	for round := 0; round < 2; round++ {
		a, err := c.QueryContext(ctx, "SELECT 1")
		require.NoError(t, err)
		b, err := c.QueryContext(ctx, "SELECT 2")
		require.NoError(t, err)
		for _, r := range []*sql.Rows{a, b} {
			require.True(t, r.Next(), "round %d", round)
			var v string
			require.NoError(t, r.Scan(&v))
			assert.Equal(t, "row", v)
			assert.False(t, r.Next())
			require.NoError(t, r.Err())
		}
		require.NoError(t, a.Close())
		require.NoError(t, b.Close())
	}
}

// A query whose errors no rule could retry (the rule's filter names
// other statements) is not read ahead: an error before its first row
// reaches the caller where it reaches it with the driver alone, and the
// query runs once.
func TestAQueryNoRuleRetriesIsNotReadAhead(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db, _ := open(t, srv, "&retryExec={1205:3,0%2B0:update}")
	plain, err := sql.Open("sqlserver", srv.DSN())
	require.NoError(t, err)
	defer plain.Close()
	srv.Handle(read, mssqltest.RowsThenError(1205, []string{"balance"}))
	// where reports whether the error came from Query (else from the rows).
	where := func(h *sql.DB) bool {
		rows, err := h.Query(read)
		if err != nil {
			requireNumber(t, err, 1205)
			return true
		}
		for rows.Next() {
		}
		requireNumber(t, rows.Err(), 1205)
		require.NoError(t, rows.Close())
		return false
	}
	assert.Equal(t, where(plain), where(db), "the error where the driver alone puts it")
	assert.Equal(t, 2, srv.Count(read), "each ran once")

	// With a rule that matches, the first row is read inside the attempt.
	srv.Handle(read, mssqltest.RowsThenError(1205, []string{"balance"}), mssqltest.Rows([]string{"balance"}, []any{int64(7)}))
	ruled, _ := open(t, srv, "&retryExec={1205:3,0%2B0:select}")
	var b int64
	require.NoError(t, ruled.QueryRow(read).Scan(&b))
	assert.Equal(t, int64(7), b)
}
