package db

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	_ "github.com/microsoft/go-mssqldb" // registers mssql, whose ? and $1 parameters sqlc's mysql engine writes
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

// A *sqlxcrl.DB is a DBTX, so sqlc's Queries run on it unchanged.
var _ DBTX = (*sqlxcrl.DB)(nil)

// A *sqlxcrl.Tx is one too, for Queries inside RunInTx.
var _ DBTX = (*sqlxcrl.Tx)(nil)

// sent is a query as go-mssqldb's mssql driver sends it: each ? becomes
// @p1, @p2, …
func sent(query string) string {
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "@p%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func open(t *testing.T, srv *mssqltest.Server) *Queries {
	t.Helper()
	// The filter names select, insert and delete: it reads the first
	// keyword after sqlc's "-- name:" comment.
	handle, err := sqlxcrl.Open("mssql", srv.DSN(), sqlxcrl.WithRetryExec("{1205:2,1ms+0:select,insert,delete}"))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, handle.Close()) })
	return New(handle)
}

// Every kind of sqlc method (:one, :many, :execresult, :exec) run on a
// *sqlxcrl.DB is retried after a deadlock.
func TestQueriesRetried(t *testing.T) {
	srv := mssqltest.NewServer(t)
	q := open(t, srv)
	ctx := context.Background()
	ada := mssqltest.Rows([]string{"id", "name", "bio"}, []any{int64(1), "Ada", "engines"})

	srv.Handle(sent(getAuthor), mssqltest.Error(1205), ada)
	a, err := q.GetAuthor(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, Author{ID: 1, Name: "Ada", Bio: sql.NullString{String: "engines", Valid: true}}, a)
	assert.Equal(t, 2, srv.Count(sent(getAuthor)), ":one retried")

	srv.Handle(sent(listAuthors), mssqltest.Error(1205), mssqltest.Error(1205), ada)
	list, err := q.ListAuthors(ctx)
	require.NoError(t, err)
	assert.Len(t, list, 1)
	assert.Equal(t, 3, srv.Count(sent(listAuthors)), ":many retried twice")

	srv.Handle(sent(createAuthor), mssqltest.Error(1205), mssqltest.Affected(1))
	res, err := q.CreateAuthor(ctx, CreateAuthorParams{Name: "Grace"})
	require.NoError(t, err)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)
	assert.Equal(t, 2, srv.Count(sent(createAuthor)), ":execresult retried")

	srv.Handle(sent(deleteAuthor), mssqltest.Error(1205), mssqltest.Error(1205), mssqltest.Error(1205))
	err = q.DeleteAuthor(ctx, 1)
	require.Error(t, err, "the rule's two retries used up")
	assert.Equal(t, 3, srv.Count(sent(deleteAuthor)))
}

// Inside sqlxcrl's RunInTx, Queries over the *sqlxcrl.Tx: a deadlock
// re-runs the whole closure on a fresh transaction, never one statement.
func TestQueriesInRunInTx(t *testing.T) {
	srv := mssqltest.NewServer(t)
	handle, err := sqlxcrl.Open("mssql", srv.DSN(), sqlxcrl.WithRetryExec("{1205:2,1ms+0}"))
	require.NoError(t, err)
	defer handle.Close()
	srv.Handle(sent(createAuthor), mssqltest.Affected(1))
	srv.Handle(sent(deleteAuthor), mssqltest.Error(1205), mssqltest.Affected(1))

	runs := 0
	err = handle.RunInTx(context.Background(), nil, func(tx *sqlxcrl.Tx) error {
		runs++ //crlvet:ignore counts the runs of the closure, to test them
		q := New(tx)
		if _, err := q.CreateAuthor(context.Background(), CreateAuthorParams{Name: "Grace"}); err != nil {
			return err
		}
		return q.DeleteAuthor(context.Background(), 1)
	})
	require.NoError(t, err)
	assert.Equal(t, 2, runs, "the closure ran again")
	assert.Equal(t, 2, srv.Count(sent(createAuthor)), "the insert ran once per transaction")
	assert.Equal(t, 1, srv.Commits())
}
