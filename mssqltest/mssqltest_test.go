package mssqltest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mssql "github.com/microsoft/go-mssqldb"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/mssqltest"
)

// open connects database/sql to srv and closes the pool when the test ends.
func open(t *testing.T, srv *mssqltest.Server) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlserver", srv.DSN())
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

func TestDSN(t *testing.T) {
	srv := mssqltest.NewServer(t)
	dsn := srv.DSN()
	require.True(t, strings.HasPrefix(dsn, "sqlserver://"), "DSN() = %q", dsn)
	require.Contains(t, dsn, "?", "DSN()")
	require.Contains(t, dsn, "encrypt=disable", "DSN()")
	require.NoError(t, open(t, srv).Ping())
	require.Equal(t, 1, srv.Logins(), "Logins()")
}

func TestErrorReply(t *testing.T) {
	tests := []struct {
		number       int32
		class, state uint8
		message      string
	}{
		{1205, 13, 51, "deadlocked on lock resources"},
		{1222, 16, 56, "Lock request time out period exceeded."},
		{2627, 14, 1, "Violation of PRIMARY KEY constraint"},
		{4060, 11, 1, `Cannot open database "master" requested by the login.`},
		{18456, 14, 1, "Login failed for user 'sa'."},
		{40197, 17, 1, "The service has encountered an error processing your request."},
		{40501, 20, 1, "The service is currently busy."},
		{40613, 17, 1, "Database 'master' on server 'mssqltest' is not currently available."},
		{777, 16, 1, "mssqltest: scripted error 777"},
	}
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	for _, tt := range tests {
		query := fmt.Sprintf("EXEC fail_%d", tt.number)
		srv.Handle(query, mssqltest.Error(tt.number))
		for _, run := range []struct {
			name string
			do   func() error
		}{
			{"Exec", func() error { _, err := db.Exec(query); return err }},
			{"Query", func() error {
				rows, err := db.Query(query)
				if err == nil {
					rows.Close()
				}
				return err
			}},
			{"ExecArgs", func() error { _, err := db.Exec(query+" @p1", 1); return err }},
		} {
			if run.name == "ExecArgs" {
				srv.Handle(query+" @p1", mssqltest.Error(tt.number))
			}
			err := run.do()
			var me mssql.Error
			require.ErrorAs(t, err, &me, "%d %s: error %v (%T) is not an mssql.Error", tt.number, run.name, err, err)
			assert.Equal(t, tt.number, me.Number, "%d %s: number", tt.number, run.name)
			assert.Equal(t, tt.class, me.Class, "%d %s: class", tt.number, run.name)
			assert.Equal(t, tt.state, me.State, "%d %s: state", tt.number, run.name)
			assert.Contains(t, me.Message, tt.message, "%d %s: message", tt.number, run.name)
			assert.Equal(t, "mssqltest", me.ServerName, "%d %s: server", tt.number, run.name)
			assert.Equal(t, int32(1), me.LineNo, "%d %s: line", tt.number, run.name)
		}
	}
	// The connection stays usable after every error.
	require.NoError(t, db.Ping())
}

func TestRowsReply(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	when := time.Date(2024, 2, 29, 13, 14, 15, 123456700, time.UTC)
	srv.Handle("SELECT * FROM everything",
		mssqltest.Rows([]string{"i64", "i", "b", "f", "s", "t", "bin", "null"},
			[]any{int64(1) << 40, 7, true, 2.5, "héllo", when, []byte{1, 2, 3}, nil},
			[]any{nil, nil, nil, nil, nil, nil, nil, nil},
			[]any{int64(-3), int32(-8), false, -0.25, "", when.Add(-48 * time.Hour), []byte{}, nil},
		))
	rows, err := db.Query("select * from everything ")
	require.NoError(t, err)
	defer rows.Close()
	cols, _ := rows.Columns()
	require.Equal(t, "i64,i,b,f,s,t,bin,null", strings.Join(cols, ","), "columns")
	var got [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		got = append(got, vals)
	}
	require.NoError(t, rows.Err())
	want := [][]any{
		{int64(1) << 40, int64(7), true, 2.5, "héllo", when, []byte{1, 2, 3}, nil},
		{nil, nil, nil, nil, nil, nil, nil, nil},
		{int64(-3), int64(-8), false, -0.25, "", when.Add(-48 * time.Hour), []byte{}, nil},
	}
	require.Len(t, got, len(want), "rows")
	for i := range want {
		for j := range want[i] {
			// equal, not assert.Equal: times compare as instants.
			assert.True(t, equal(got[i][j], want[i][j]), "row %d column %s: got %#v (%T), want %#v (%T)", i, cols[j], got[i][j], got[i][j], want[i][j], want[i][j])
		}
	}
	types, _ := rows.ColumnTypes()
	wantTypes := []string{"BIGINT", "INT", "BIT", "FLOAT", "NVARCHAR", "DATETIME2", "VARBINARY", "NVARCHAR"}
	for i, ct := range types {
		assert.Equal(t, wantTypes[i], ct.DatabaseTypeName(), "column %s type", cols[i])
	}
}

func equal(a, b any) bool {
	switch x := a.(type) {
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	case []byte:
		y, ok := b.([]byte)
		return ok && string(x) == string(y)
	default:
		return a == b
	}
}

func TestRowsTypedScan(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	long := strings.Repeat("x", 5000)
	srv.Handle("SELECT id, name, score, ok, at FROM t WHERE id = @p1",
		mssqltest.Rows([]string{"id", "name", "score", "ok", "at"}, []any{int64(5), long, float32(1.5), true, nil}))
	var (
		id    int64
		name  string
		score float64
		ok    bool
		at    sql.NullTime
	)
	err := db.QueryRow("SELECT id, name, score, ok, at FROM t WHERE id = @p1", 5).Scan(&id, &name, &score, &ok, &at)
	require.NoError(t, err)
	require.Equal(t, int64(5), id, "id")
	require.Equal(t, long, name, "name")
	require.Equal(t, 1.5, score, "score")
	require.True(t, ok, "ok")
	require.False(t, at.Valid, "at: %v", at)
}

func TestRowsWrongShape(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	srv.Handle("SELECT a, b", mssqltest.Rows([]string{"a", "b"}, []any{1}))
	_, err := db.Query("SELECT a, b")
	var me mssql.Error
	require.ErrorAs(t, err, &me)
	require.Equal(t, int32(50000), me.Number, "got %v", err)
	require.Contains(t, me.Message, "row 0 has 1 values for 2 columns")
}

func TestAffected(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	srv.Handle("UPDATE t SET a = @p1", mssqltest.Affected(3), mssqltest.Affected(0))
	for _, want := range []int64{3, 0, 0} {
		res, err := db.Exec("UPDATE t SET a = @p1", 1)
		require.NoError(t, err)
		n, err := res.RowsAffected()
		require.NoError(t, err, "RowsAffected()")
		require.Equal(t, want, n, "RowsAffected()")
	}
	// Unscripted statements succeed without rows.
	res, err := db.Exec("DELETE FROM anything")
	require.NoError(t, err)
	n, _ := res.RowsAffected()
	require.Zero(t, n, "unscripted RowsAffected()")
	rows, err := db.Query("SELECT nothing")
	require.NoError(t, err)
	require.False(t, rows.Next(), "unscripted query returned a row")
	rows.Close()
}

func TestVersion(t *testing.T) {
	srv := mssqltest.NewServer(t)
	var v string
	require.NoError(t, open(t, srv).QueryRow("SELECT @@VERSION").Scan(&v), "SELECT @@VERSION")
	require.True(t, strings.HasPrefix(v, "Microsoft SQL Server"), "SELECT @@VERSION = %q", v)
}

func TestParameterisedCount(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	const q = "SELECT a FROM t WHERE id = @p1"
	srv.Handle(q, mssqltest.Rows([]string{"a"}, []any{"x"}))
	for i := 0; i < 3; i++ {
		var a string
		require.NoError(t, db.QueryRow(q, 5).Scan(&a))
		require.Equal(t, "x", a)
	}
	_, err := db.Exec("  select A from T where ID = @p1\n", 6)
	require.NoError(t, err)
	require.Equal(t, 4, srv.Count(" SELECT a FROM t WHERE id = @p1 "), "Count")
	require.Zero(t, srv.Count("SELECT other"), "Count(other)")
}

func TestScriptOrder(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	srv.Handle("EXEC step", mssqltest.Error(1205), mssqltest.Error(1222), mssqltest.Affected(1))
	var numbers []int32
	for i := 0; i < 4; i++ {
		_, err := db.Exec("EXEC step")
		var me mssql.Error
		if errors.As(err, &me) {
			numbers = append(numbers, me.Number)
		} else {
			require.NoError(t, err)
			numbers = append(numbers, 0)
		}
	}
	require.Equal(t, "[1205 1222 0 0]", fmt.Sprint(numbers), "error numbers")
	srv.Handle("EXEC step") // removes the script
	srv.Handle("EXEC other", mssqltest.Error(1205))
	_, err := db.Exec("EXEC step")
	require.NoError(t, err)
}

func TestHang(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	db.SetMaxOpenConns(1)
	srv.Handle("WAITFOR DELAY '01:00:00'", mssqltest.Hang())
	for _, run := range []func(ctx context.Context) error{
		func(ctx context.Context) error {
			_, err := db.ExecContext(ctx, "WAITFOR DELAY '01:00:00'")
			return err
		},
		func(ctx context.Context) error {
			rows, err := db.QueryContext(ctx, "WAITFOR DELAY '01:00:00'")
			if err == nil {
				rows.Close()
			}
			return err
		},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		start := time.Now()
		err := run(ctx)
		cancel()
		// The bound tells a cancelled Hang from one that holds for the
		// hour; a tight one flakes on a loaded machine.
		assert.LessOrEqual(t, time.Since(start), 5*time.Second, "time cancel took")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		require.NoError(t, db.Ping(), "after cancel")
	}
}

func TestDelay(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	srv.Handle("EXEC slow", mssqltest.Delay(20*time.Millisecond, mssqltest.Affected(2)))
	start := time.Now()
	res, err := db.Exec("EXEC slow")
	require.NoError(t, err)
	n, _ := res.RowsAffected()
	require.Equal(t, int64(2), n, "RowsAffected")
	require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond, "time before the delayed reply")
	// A deadline shorter than the delay cancels it.
	srv.Handle("EXEC slower", mssqltest.Delay(time.Minute, mssqltest.Affected(2)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err = db.ExecContext(ctx, "EXEC slower")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, db.Ping())
}

func TestDrop(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	db.SetMaxOpenConns(1)
	srv.Handle("EXEC flaky", mssqltest.Drop(), mssqltest.Affected(1))
	require.NoError(t, db.Ping())
	_, err := db.Exec("EXEC flaky")
	require.Error(t, err, "Drop: no error")
	var me mssql.Error
	require.False(t, errors.As(err, &me), "Drop surfaced as a server error: %v", err)
	res, err := db.Exec("EXEC flaky")
	require.NoError(t, err, "pool did not recover")
	n, _ := res.RowsAffected()
	require.Equal(t, int64(1), n, "RowsAffected")
	require.Equal(t, 2, srv.Logins(), "Logins(), want one new connection")
}

func TestFailLogin(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	srv.FailLogin(18456, 2)
	for i := 0; i < 2; i++ {
		err := db.Ping()
		var me mssql.Error
		require.ErrorAs(t, err, &me, "ping %d", i)
		require.Equal(t, int32(18456), me.Number, "ping %d: got %v", i, err)
		require.Equal(t, uint8(14), me.Class, "ping %d: got %v", i, err)
		require.Contains(t, me.Message, "Login failed for user 'sa'.", "ping %d", i)
	}
	require.NoError(t, db.Ping(), "third ping")
	require.Equal(t, 3, srv.Logins(), "Logins()")
	srv.FailLogin(4060, 1)
	db2 := open(t, srv)
	err := db2.Ping()
	var me mssql.Error
	require.ErrorAs(t, err, &me)
	require.Equal(t, int32(4060), me.Number, "got %v", err)
	require.Equal(t, uint8(11), me.Class, "got %v", err)
}

func TestTransactions(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	ctx := context.Background()

	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.Exec("INSERT INTO t VALUES (@p1)", 1)
	require.NoError(t, err)
	_, err = tx.Exec("UPDATE t SET a = 2")
	require.NoError(t, err)
	require.NoError(t, tx.Commit())

	tx, err = db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable})
	require.NoError(t, err)
	_, err = tx.Exec("DELETE FROM t")
	require.NoError(t, err)
	require.NoError(t, tx.Rollback())
	_, err = db.Exec("SELECT outside")
	require.NoError(t, err)

	assert.Equal(t, "[[INSERT INTO t VALUES (@p1) UPDATE t SET a = 2]]", fmt.Sprint(srv.Committed()), "Committed()")
	assert.Equal(t, "[[DELETE FROM t]]", fmt.Sprint(srv.RolledBack()), "RolledBack()")
	assert.Equal(t, 1, srv.Commits(), "Commits()")
	assert.Equal(t, 1, srv.Rollbacks(), "Rollbacks()")
	assert.Equal(t, 2, srv.Count("BEGIN TRANSACTION"), "Count(BEGIN TRANSACTION)")
}

func TestDeadlockEndsTransaction(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	srv.Handle("UPDATE hot SET n = n + 1", mssqltest.Error(1205), mssqltest.Affected(1))

	tx, err := db.Begin()
	require.NoError(t, err)
	_, err = tx.Exec("SELECT before")
	require.NoError(t, err)
	_, err = tx.Exec("UPDATE hot SET n = n + 1")
	var me mssql.Error
	require.ErrorAs(t, err, &me)
	require.Equal(t, int32(1205), me.Number, "got %v", err)
	// The server ended the transaction: more work fails (go-mssqldb v1.10
	// and later see the server's transaction end; older ones run the
	// statement, outside any transaction, as SQL Server would), rollback
	// is a no-op.
	_, err = tx.Exec("SELECT after")
	if driverSeesAbortedTransactions(t) {
		require.Error(t, err, "statement after the deadlock ran inside a dead transaction")
		require.NoError(t, tx.Rollback(), "Rollback after deadlock")
	} else {
		_ = tx.Rollback() // answered 3903 by this driver: its transaction is already gone
	}
	require.Equal(t, "[[SELECT before UPDATE hot SET n = n + 1]]", fmt.Sprint(srv.RolledBack()), "RolledBack()")

	// The whole transaction again: it commits.
	tx, err = db.Begin()
	require.NoError(t, err)
	_, err = tx.Exec("SELECT before")
	require.NoError(t, err)
	_, err = tx.Exec("UPDATE hot SET n = n + 1")
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
	require.Equal(t, "[[SELECT before UPDATE hot SET n = n + 1]]", fmt.Sprint(srv.Committed()), "Committed()")
}

func TestDropInTransaction(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	srv.Handle("EXEC boom", mssqltest.Drop())
	tx, err := db.Begin()
	require.NoError(t, err)
	_, err = tx.Exec("EXEC boom")
	require.Error(t, err, "Drop: no error")
	_ = tx.Rollback()
	// The server notices the lost session on its own goroutine.
	deadline := time.Now().Add(2 * time.Second)
	for srv.Rollbacks() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	require.Equal(t, "[[EXEC boom]]", fmt.Sprint(srv.RolledBack()), "RolledBack()")
}

func TestScriptedCommit(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	srv.Handle("COMMIT TRANSACTION", mssqltest.Error(40197), mssqltest.Affected(0))
	tx, err := db.Begin()
	require.NoError(t, err)
	require.Error(t, tx.Commit(), "scripted commit failure did not surface")
	require.Zero(t, srv.Commits(), "failed commit recorded as committed")
}

func TestConcurrentConnections(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	const n = 32
	db.SetMaxOpenConns(n)
	for i := 0; i < n; i++ {
		srv.Handle(fmt.Sprintf("SELECT v FROM g%d WHERE k = @p1", i), mssqltest.Rows([]string{"v"}, []any{int64(i)}))
	}
	var wg, ready sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		ready.Add(1)
		go func(i int) {
			defer wg.Done()
			conn, err := db.Conn(context.Background()) // one connection each
			ready.Done()
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			<-start
			for j := 0; j < 20; j++ {
				var v int64
				if err := conn.QueryRowContext(context.Background(), fmt.Sprintf("SELECT v FROM g%d WHERE k = @p1", i), j).Scan(&v); err != nil {
					errs <- err
					return
				}
				if v != int64(i) {
					errs <- fmt.Errorf("goroutine %d got %d", i, v)
					return
				}
			}
		}(i)
	}
	// Every goroutine holds its own connection before any finishes: a
	// goroutine that asked late would otherwise reuse one given back.
	ready.Wait()
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	for i := 0; i < n; i++ {
		assert.Equal(t, 20, srv.Count(fmt.Sprintf("SELECT v FROM g%d WHERE k = @p1", i)), "Count(g%d)", i)
	}
	assert.Equal(t, n, srv.Logins(), "Logins()")
}

func TestReset(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	srv.Handle("EXEC x", mssqltest.Error(1205))
	_, _ = db.Exec("EXEC x")
	srv.Reset()
	_, err := db.Exec("EXEC x")
	require.NoError(t, err)
	require.Equal(t, []string{"EXEC x"}, srv.Statements(), "Statements()")
}

func TestClose(t *testing.T) {
	srv, err := mssqltest.Start()
	require.NoError(t, err)
	db := open(t, srv)
	srv.Handle("EXEC forever", mssqltest.Hang())
	done := make(chan error, 1)
	go func() { _, err := db.Exec("EXEC forever"); done <- err }()
	for srv.Count("EXEC forever") == 0 {
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, srv.Close())
	require.Error(t, <-done, "hung statement succeeded after Close")
	require.NoError(t, srv.Close())
}

// Closing a result set early makes the driver cancel the rest with an
// ATTENTION after the server has sent everything; the server must still
// confirm it so the connection stays in step.
func TestEarlyCloseOfLargeResult(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	db.SetMaxOpenConns(1)
	rows := make([][]any, 2000)
	for i := range rows {
		rows[i] = []any{int64(i), strings.Repeat("v", 40)}
	}
	srv.Handle("SELECT big", mssqltest.Rows([]string{"n", "s"}, rows...))
	for i := 0; i < 20; i++ {
		var n int64
		var s string
		require.NoError(t, db.QueryRow("SELECT big").Scan(&n, &s))
		require.Zero(t, n, "first row")
	}
	r, err := db.Query("SELECT big")
	require.NoError(t, err)
	count := 0
	for r.Next() {
		count++
	}
	require.NoError(t, r.Err(), "read %d rows", count)
	require.Equal(t, len(rows), count, "rows read")
	require.NoError(t, db.Ping())
}

// db.Ping sends "select 1;"; trailing semicolons do not matter in scripts.
func TestPingIsScriptable(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	srv.Handle("SELECT 1", mssqltest.Error(40613), mssqltest.Affected(0))
	var me mssql.Error
	err := db.Ping()
	require.ErrorAs(t, err, &me, "first ping")
	require.Equal(t, int32(40613), me.Number, "first ping: %v", err)
	require.NoError(t, db.Ping(), "second ping")
	require.Equal(t, 2, srv.Count("select 1;"), "Count")
}

// Garbage on the wire closes that connection only; the server keeps serving.
func TestMalformedInputClosesConnection(t *testing.T) {
	srv := mssqltest.NewServer(t)
	for _, garbage := range [][]byte{
		[]byte("GET / HTTP/1.1\r\n\r\n"),
		{0x12, 0x01, 0x00, 0x09, 0, 0, 1, 0, 0x00}, // PRELOGIN without terminator
		{0x12, 0x01, 0x00, 0x02, 0, 0, 1, 0},       // length shorter than the header
		{0x01, 0x01, 0x00, 0x0C, 0, 0, 1, 0, 1, 2, 3, 4},
	} {
		nc, err := net.Dial("tcp", srv.Addr())
		require.NoError(t, err)
		_, err = nc.Write(garbage)
		require.NoError(t, err)
		_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		// Closed is EOF, or a reset when the server left bytes unread.
		var ne net.Error
		_, err = io.ReadAll(nc)
		assert.False(t, errors.As(err, &ne) && ne.Timeout(), "%q: connection not closed: %v", garbage, err)
		nc.Close()
	}
	require.NoError(t, open(t, srv).Ping())
}

// driverSeesAbortedTransactions reports whether the go-mssqldb that this
// module's tests build with (the version its go.mod requires: a test
// binary carries no dependency versions) is v1.10 or later, which fails a
// statement of a transaction the server ended (a deadlock victim's)
// instead of running it. crl's go.mod requires the lowest version the
// library needs (v1.8.2), so that adding crl does not raise a user's.
func driverSeesAbortedTransactions(t *testing.T) bool {
	t.Helper()
	mod, err := os.ReadFile(filepath.Join("..", "go.mod"))
	require.NoError(t, err)
	for _, line := range strings.Split(string(mod), "\n") {
		var major, minor int
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "github.com/microsoft/go-mssqldb v%d.%d", &major, &minor); err == nil {
			return major > 1 || major == 1 && minor >= 10
		}
	}
	require.Fail(t, "go.mod requires no go-mssqldb")
	return false
}
