package db

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	mssql "github.com/microsoft/go-mssqldb" // registers mssql, whose ? parameters sqlc's mysql engine writes
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/mssqltest"
)

// The generated code is used as sqlc writes it: its DBTX is the plain
// *sql.DB that crl.Open returns, and a transaction is sqlc's own
// q.WithTx(tx) over the *sql.Tx that crl.RunInTx hands its function.
var (
	_ DBTX = (*sql.DB)(nil)
	_ DBTX = (*sql.Tx)(nil)
)

// open opens a pool on the stand-in with crl inside its driver, under
// the statement rules.
func open(t *testing.T, srv *mssqltest.Server, rules string) *sql.DB {
	t.Helper()
	db, err := crl.Open("mssql", srv.DSN(), crl.WithRetryExec(rules))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, db.Close()) })
	return db
}

func errorNumber(err error) int32 {
	var e mssql.Error
	if errors.As(err, &e) {
		return e.Number
	}
	return 0
}

var ada = mssqltest.Rows([]string{"id", "name", "bio"}, []any{int64(1), "Ada", "engines"})

// Every kind of sqlc method (:one, :many, :execresult, :exec) run on the
// *sql.DB is retried after a deadlock by crl's driver layer. The filter
// names select, insert and delete: it reads the first keyword after
// sqlc's "-- name:" comment.
func TestQueriesRetried(t *testing.T) {
	srv := mssqltest.NewServer(t)
	q := New(open(t, srv, "{1205:2,1ms+0:select,insert,delete}"))
	ctx := context.Background()

	srv.Handle(Sent("GetAuthor"), mssqltest.Error(1205), ada)
	a, err := q.GetAuthor(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, Author{ID: 1, Name: "Ada", Bio: sql.NullString{String: "engines", Valid: true}}, a)
	assert.Equal(t, 2, srv.Count(Sent("GetAuthor")), ":one retried")

	srv.Handle(Sent("ListAuthors"), mssqltest.Error(1205), mssqltest.Error(1205), ada)
	list, err := q.ListAuthors(ctx)
	require.NoError(t, err)
	assert.Len(t, list, 1)
	assert.Equal(t, 3, srv.Count(Sent("ListAuthors")), ":many retried twice")

	srv.Handle(Sent("CreateAuthor"), mssqltest.Error(1205), mssqltest.Affected(1))
	res, err := q.CreateAuthor(ctx, CreateAuthorParams{Name: "Grace"})
	require.NoError(t, err)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)
	assert.Equal(t, 2, srv.Count(Sent("CreateAuthor")), ":execresult retried")

	srv.Handle(Sent("DeleteAuthor"), mssqltest.Error(1205), mssqltest.Affected(1))
	require.NoError(t, q.DeleteAuthor(ctx, 1))
	assert.Equal(t, 2, srv.Count(Sent("DeleteAuthor")), ":exec retried")
}

// Sent knows every query of query.sql and nothing else.
func TestSent(t *testing.T) {
	assert.Equal(t, "-- name: DeleteAuthor :exec\nDELETE FROM authors\nWHERE id = @p1\n", Sent("DeleteAuthor"))
	assert.Empty(t, Sent("DropAuthors"))
}

// The rule's retry count bounds the attempts; the error after the last
// one is the server's deadlock, which errors.As still finds.
func TestRetriesUsedUp(t *testing.T) {
	srv := mssqltest.NewServer(t)
	q := New(open(t, srv, "{1205:2,1ms+0}"))
	srv.Handle(Sent("DeleteAuthor"), mssqltest.Error(1205))
	err := q.DeleteAuthor(context.Background(), 1)
	require.Error(t, err)
	assert.Equal(t, int32(1205), errorNumber(err))
	assert.Equal(t, 3, srv.Count(Sent("DeleteAuthor")), "the first run and the rule's two retries")
}

// A statement prepared on the *sql.DB, as sqlc's emit_prepared_queries
// code runs its queries (q.queryRow on a *sql.Stmt), is retried too.
func TestPreparedQueryRetried(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv, "{1205:2,1ms+0}")
	ctx := context.Background()
	stmt, err := db.PrepareContext(ctx, getAuthor)
	require.NoError(t, err)
	defer stmt.Close()

	srv.Handle(Sent("GetAuthor"), mssqltest.Error(1205), ada)
	var a Author
	require.NoError(t, stmt.QueryRowContext(ctx, 1).Scan(&a.ID, &a.Name, &a.Bio))
	assert.Equal(t, "Ada", a.Name)
	assert.Equal(t, 2, srv.Count(Sent("GetAuthor")))
}

// crl.RunInTx with sqlc's own q.WithTx(tx): a deadlock inside the
// transaction is replayed by the driver layer on a fresh transaction
// (the INSERT re-sent, its answer compared, then the DELETE), never one
// statement alone, so the function runs once and the server commits one
// transaction holding each statement once.
func TestQueriesInRunInTx(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv, "{1205:2,1ms+0}")
	q := New(db)
	srv.Handle(Sent("CreateAuthor"), mssqltest.Affected(1))
	srv.Handle(Sent("DeleteAuthor"), mssqltest.Error(1205), mssqltest.Affected(1))

	ctx := context.Background()
	runs := 0
	err := crl.RunInTx(ctx, db, nil, func(tx *sql.Tx) error {
		runs++ //crlvet:ignore counts the runs of the closure, to test them
		qtx := q.WithTx(tx)
		if _, err := qtx.CreateAuthor(ctx, CreateAuthorParams{Name: "Grace"}); err != nil {
			return err
		}
		return qtx.DeleteAuthor(ctx, 1)
	})
	require.NoError(t, err)
	assert.Equal(t, 1, runs, "the replay was equal: the function ran once")
	assert.Equal(t, 2, srv.Count(Sent("CreateAuthor")), "the insert ran once per transaction")
	assert.Equal(t, 2, srv.Count(Sent("DeleteAuthor")), "the delete was not retried on its own")
	assert.Equal(t, [][]string{{Sent("CreateAuthor"), Sent("DeleteAuthor")}}, srv.Committed(), "one transaction committed, each statement once")
	assert.Equal(t, 1, srv.Rollbacks(), "the deadlock victim's transaction")
}

// A rule with a query filter is checked against the statement whose error
// ended the transaction, not against another statement of it: a deadlock
// of the DELETE re-runs the transaction under {1205:2,1ms+0:delete},
// whose filter the INSERT before it does not match, and does not under
// {1205:2,1ms+0:insert}, whose filter the INSERT matches.
func TestTxFilterCheckedAgainstFailingStatement(t *testing.T) {
	transfer := func(db *sql.DB, runs *int) error {
		q := New(db)
		return crl.RunInTx(context.Background(), db, nil, func(tx *sql.Tx) error {
			*runs++ //crlvet:ignore counts the runs of the closure, to test them
			qtx := q.WithTx(tx)
			if _, err := qtx.CreateAuthor(context.Background(), CreateAuthorParams{Name: "Grace"}); err != nil {
				return err
			}
			return qtx.DeleteAuthor(context.Background(), 1)
		})
	}

	t.Run("the failing statement matches", func(t *testing.T) {
		srv := mssqltest.NewServer(t)
		db := open(t, srv, "{1205:2,1ms+0:delete}")
		srv.Handle(Sent("CreateAuthor"), mssqltest.Affected(1))
		srv.Handle(Sent("DeleteAuthor"), mssqltest.Error(1205), mssqltest.Affected(1))
		runs := 0
		require.NoError(t, transfer(db, &runs))
		assert.Equal(t, 1, runs, "replayed, the function ran once")
		assert.Equal(t, 2, srv.Count(Sent("DeleteAuthor")), "the DELETE ran again after the replay")
		assert.Equal(t, 1, srv.Commits())
	})

	t.Run("the failing statement does not match", func(t *testing.T) {
		srv := mssqltest.NewServer(t)
		db := open(t, srv, "{1205:2,1ms+0:insert}")
		srv.Handle(Sent("CreateAuthor"), mssqltest.Affected(1))
		srv.Handle(Sent("DeleteAuthor"), mssqltest.Error(1205), mssqltest.Affected(1))
		runs := 0
		err := transfer(db, &runs)
		require.Error(t, err)
		assert.Equal(t, int32(1205), errorNumber(err), "the server's error, as it came")
		assert.Equal(t, 1, runs, "the DELETE's deadlock is not the filter's")
		assert.Zero(t, srv.Commits())
	})
}
