package crl_test

import (
	"context"
	"database/sql"
	"os"
	"strings"
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

// Over go-sql-driver/mysql, whose rows have more than one result set,
// the layer's rows have the driver's: a text of two SELECTs gives both,
// read whole or with the first skipped (its first row, read ahead, is
// dropped with it), and the columns' types are the driver's. Each round
// runs the text twice, so that the second runs on the path of a text
// seen before.
func TestRowsHaveTheDriversResultSets(t *testing.T) {
	plain, db := plainAndLayer(t, "CRL_MYSQL_DSN", "mysql", func(dsn string) string {
		return dsn + map[bool]string{true: "&", false: "?"}[strings.Contains(dsn, "?")] + "multiStatements=true"
	})
	const text = "SELECT 1 AS a; SELECT 2 AS b, 'x' AS c"
	for i := range 4 {
		skip := i >= 2
		got, err := db.Query(text)
		require.NoError(t, err)
		if !skip {
			require.True(t, got.Next())
			var a int64
			require.NoError(t, got.Scan(&a))
			assert.Equal(t, int64(1), a)
			assert.False(t, got.Next())
		}
		require.True(t, got.NextResultSet(), "round %d", i)
		require.True(t, got.Next())
		var (
			b int64
			c string
		)
		require.NoError(t, got.Scan(&b, &c))
		assert.Equal(t, []any{int64(2), "x"}, []any{b, c})
		assert.Equal(t, columnTypes(t, plain, text, 1), columnTypes(t, db, text, 1))
		assert.False(t, got.Next())
		assert.False(t, got.NextResultSet())
		require.NoError(t, got.Err())
		require.NoError(t, got.Close())
	}
}

// Over pgx's stdlib, whose rows have one result set, the layer's rows
// have one too: NextResultSet answers false with no error, as the
// driver's do, and the columns' types are the driver's.
func TestRowsOfOneResultSetHaveNoOther(t *testing.T) {
	plain, db := plainAndLayer(t, "CRL_POSTGRES_DSN", "pgx", nil)
	const text = "SELECT 7::int4 AS a, 'x'::varchar(5) AS b, 1.5::numeric(4,2) AS c"
	for i := range 2 {
		got, err := db.Query(text)
		require.NoError(t, err)
		require.True(t, got.Next(), "round %d", i)
		var (
			a int64
			b string
			c float64
		)
		require.NoError(t, got.Scan(&a, &b, &c))
		assert.Equal(t, []any{int64(7), "x", 1.5}, []any{a, b, c})
		assert.False(t, got.Next())
		assert.False(t, got.NextResultSet())
		require.NoError(t, got.Err())
		require.NoError(t, got.Close())
		assert.Equal(t, columnTypes(t, plain, text, 0), columnTypes(t, db, text, 0))
	}
}

// columnTypes returns the types of the columns of text's result set set
// (0 the first), as db's rows give them.
func columnTypes(t *testing.T, db *sql.DB, text string, set int) []*sql.ColumnType {
	t.Helper()
	rows, err := db.Query(text)
	require.NoError(t, err)
	defer rows.Close()
	for range set {
		require.True(t, rows.NextResultSet())
	}
	types, err := rows.ColumnTypes()
	require.NoError(t, err)
	return types
}

// plainAndLayer opens two pools over the DSN of the environment variable
// env (the test is skipped without it), changed by dsnOf when not nil:
// database/sql alone with driverName, and crl.Open over the same driver.
// Both close at the test's end.
func plainAndLayer(t *testing.T, env, driverName string, dsnOf func(string) string) (plain, layer *sql.DB) {
	t.Helper()
	dsn := os.Getenv(env)
	if dsn == "" {
		t.Skip(env + " not set")
	}
	if dsnOf != nil {
		dsn = dsnOf(dsn)
	}
	plain, err := sql.Open(driverName, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { plain.Close() })
	layer, err = crl.Open(driverName, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { layer.Close() })
	return plain, layer
}
