package adapter

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/mssqltest"
)

const (
	readN  = "SELECT n FROM t"
	readM  = "SELECT m FROM t"
	update = "UPDATE t SET n = n + 1"
)

// beginOn starts a stand-in whose reads answer two rows and begins a
// transaction on it with the real go-mssqldb driver.
func beginOn(t *testing.T) (*mssqltest.Server, *sql.Tx) {
	t.Helper()
	srv := mssqltest.NewServer(t)
	for _, q := range []string{readN, readM} {
		srv.Handle(q, mssqltest.Rows([]string{"n"}, []any{int64(1)}, []any{int64(2)}))
	}
	db, err := sql.Open("sqlserver", srv.DSN())
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, db.Close()) })
	tx, err := db.Begin()
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback() })
	return srv, tx
}

// record runs query in tx and records its rows in r.
func record(t *testing.T, r *Recorder, tx *sql.Tx, ctx context.Context, query string) *sql.Rows {
	t.Helper()
	rows, err := tx.QueryContext(ctx, query)
	r.Statement(query, err)
	require.NoError(t, err)
	r.Rows(query, rows)
	return rows
}

// A transaction that reads many result sets keeps only the rows still
// open, not one per read: rows read to the end or closed are let go when
// the next rows are recorded. Before, the Recorder kept every rows of the
// attempt until it ended.
func TestRecorderLetsClosedRowsGo(t *testing.T) {
	_, tx := beginOn(t)
	var r Recorder
	const reads = 1000
	for i := range reads {
		rows := record(t, &r, tx, context.Background(), readN)
		if i%2 == 0 {
			for rows.Next() { // read to the end: closes the rows
			}
			require.NoError(t, rows.Err())
		} else {
			require.NoError(t, rows.Close())
		}
	}
	r.mu.Lock()
	retained := len(r.rows)
	r.mu.Unlock()
	assert.LessOrEqual(t, retained, 1, "rows retained after %d closed reads", reads)
	assert.Empty(t, r.FailedQuery(), "failed statement")
}

// Rows still open stay recorded; rows closed with an error of their own
// make their query the failed statement when they are let go, and a later
// read that succeeds does not change it; a later failed statement does.
func TestRecorderSettlesInOrder(t *testing.T) {
	_, tx := beginOn(t)
	var r Recorder

	// Rows that fail while read: their context ends, database/sql closes
	// them with its error.
	ctx, cancel := context.WithCancel(context.Background())
	failing := record(t, &r, tx, ctx, readN)
	cancel()
	// database/sql closes them from a goroutine of its own.
	require.Eventually(t, func() bool { return failing.Err() != nil }, 5*time.Second, time.Millisecond)
	require.ErrorIs(t, failing.Err(), context.Canceled)
	require.True(t, closed(failing), "rows closed by their context")

	ok := record(t, &r, tx, context.Background(), readM) // lets the failed rows go, records them
	r.mu.Lock()
	assert.Len(t, r.rows, 1, "rows retained: the open one")
	r.mu.Unlock()
	assert.Equal(t, readN, r.FailedQuery(), "the rows that failed")

	require.NoError(t, ok.Close())
	record(t, &r, tx, context.Background(), readM).Close()
	assert.Equal(t, readN, r.FailedQuery(), "after later reads that succeeded")

	r.Statement(update, context.Canceled)
	assert.Equal(t, update, r.FailedQuery(), "after a later failed statement")
}
