package mssqltest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	mssql "github.com/microsoft/go-mssqldb"

	"github.com/crl-go/crl/mssqltest"
)

// open connects database/sql to srv and closes the pool when the test ends.
func open(t *testing.T, srv *mssqltest.Server) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlserver", srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestDSN(t *testing.T) {
	srv := mssqltest.NewServer(t)
	dsn := srv.DSN()
	if !strings.HasPrefix(dsn, "sqlserver://") || !strings.Contains(dsn, "?") || !strings.Contains(dsn, "encrypt=disable") {
		t.Fatalf("DSN() = %q", dsn)
	}
	if err := open(t, srv).Ping(); err != nil {
		t.Fatal(err)
	}
	if got := srv.Logins(); got != 1 {
		t.Fatalf("Logins() = %d, want 1", got)
	}
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
			if !errors.As(err, &me) {
				t.Fatalf("%d %s: error %v (%T) is not an mssql.Error", tt.number, run.name, err, err)
			}
			if me.Number != tt.number || me.Class != tt.class || me.State != tt.state || !strings.Contains(me.Message, tt.message) {
				t.Errorf("%d %s: got number %d class %d state %d message %q", tt.number, run.name, me.Number, me.Class, me.State, me.Message)
			}
			if me.ServerName != "mssqltest" || me.LineNo != 1 {
				t.Errorf("%d %s: server %q line %d", tt.number, run.name, me.ServerName, me.LineNo)
			}
		}
	}
	// The connection stays usable after every error.
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
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
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if strings.Join(cols, ",") != "i64,i,b,f,s,t,bin,null" {
		t.Fatalf("columns %v", cols)
	}
	var got [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		got = append(got, vals)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := [][]any{
		{int64(1) << 40, int64(7), true, 2.5, "héllo", when, []byte{1, 2, 3}, nil},
		{nil, nil, nil, nil, nil, nil, nil, nil},
		{int64(-3), int64(-8), false, -0.25, "", when.Add(-48 * time.Hour), []byte{}, nil},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d rows, want %d", len(got), len(want))
	}
	for i := range want {
		for j := range want[i] {
			if !equal(got[i][j], want[i][j]) {
				t.Errorf("row %d column %s: got %#v (%T), want %#v (%T)", i, cols[j], got[i][j], got[i][j], want[i][j], want[i][j])
			}
		}
	}
	types, _ := rows.ColumnTypes()
	wantTypes := []string{"BIGINT", "INT", "BIT", "FLOAT", "NVARCHAR", "DATETIME2", "VARBINARY", "NVARCHAR"}
	for i, ct := range types {
		if ct.DatabaseTypeName() != wantTypes[i] {
			t.Errorf("column %s type %s, want %s", cols[i], ct.DatabaseTypeName(), wantTypes[i])
		}
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
	if err != nil {
		t.Fatal(err)
	}
	if id != 5 || name != long || score != 1.5 || !ok || at.Valid {
		t.Fatalf("got %d %d-char name %v %v %v", id, len(name), score, ok, at)
	}
}

func TestRowsWrongShape(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	srv.Handle("SELECT a, b", mssqltest.Rows([]string{"a", "b"}, []any{1}))
	_, err := db.Query("SELECT a, b")
	var me mssql.Error
	if !errors.As(err, &me) || me.Number != 50000 || !strings.Contains(me.Message, "row 0 has 1 values for 2 columns") {
		t.Fatalf("got %v", err)
	}
}

func TestAffected(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	srv.Handle("UPDATE t SET a = @p1", mssqltest.Affected(3), mssqltest.Affected(0))
	for _, want := range []int64{3, 0, 0} {
		res, err := db.Exec("UPDATE t SET a = @p1", 1)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := res.RowsAffected(); err != nil || n != want {
			t.Fatalf("RowsAffected() = %d, %v; want %d", n, err, want)
		}
	}
	// Unscripted statements succeed without rows.
	res, err := db.Exec("DELETE FROM anything")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 0 {
		t.Fatalf("unscripted RowsAffected() = %d", n)
	}
	rows, err := db.Query("SELECT nothing")
	if err != nil {
		t.Fatal(err)
	}
	if rows.Next() {
		t.Fatal("unscripted query returned a row")
	}
	rows.Close()
}

func TestVersion(t *testing.T) {
	srv := mssqltest.NewServer(t)
	var v string
	if err := open(t, srv).QueryRow("SELECT @@VERSION").Scan(&v); err != nil || !strings.HasPrefix(v, "Microsoft SQL Server") {
		t.Fatalf("SELECT @@VERSION = %q, %v", v, err)
	}
}

func TestParameterisedCount(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	const q = "SELECT a FROM t WHERE id = @p1"
	srv.Handle(q, mssqltest.Rows([]string{"a"}, []any{"x"}))
	for i := 0; i < 3; i++ {
		var a string
		if err := db.QueryRow(q, 5).Scan(&a); err != nil || a != "x" {
			t.Fatalf("got %q, %v", a, err)
		}
	}
	if _, err := db.Exec("  select A from T where ID = @p1\n", 6); err != nil {
		t.Fatal(err)
	}
	if got := srv.Count(" SELECT a FROM t WHERE id = @p1 "); got != 4 {
		t.Fatalf("Count = %d, want 4", got)
	}
	if got := srv.Count("SELECT other"); got != 0 {
		t.Fatalf("Count(other) = %d", got)
	}
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
		} else if err != nil {
			t.Fatal(err)
		} else {
			numbers = append(numbers, 0)
		}
	}
	if fmt.Sprint(numbers) != "[1205 1222 0 0]" {
		t.Fatalf("got %v", numbers)
	}
	srv.Handle("EXEC step") // removes the script
	srv.Handle("EXEC other", mssqltest.Error(1205))
	if _, err := db.Exec("EXEC step"); err != nil {
		t.Fatal(err)
	}
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
		if elapsed := time.Since(start); elapsed > 5*time.Second {
			t.Errorf("cancel took %v", elapsed)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v, want context.DeadlineExceeded", err)
		}
		if err := db.Ping(); err != nil {
			t.Fatalf("after cancel: %v", err)
		}
	}
}

func TestDelay(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	srv.Handle("EXEC slow", mssqltest.Delay(20*time.Millisecond, mssqltest.Affected(2)))
	start := time.Now()
	res, err := db.Exec("EXEC slow")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 2 || time.Since(start) < 20*time.Millisecond {
		t.Fatalf("RowsAffected %d after %v", n, time.Since(start))
	}
	// A deadline shorter than the delay cancels it.
	srv.Handle("EXEC slower", mssqltest.Delay(time.Minute, mssqltest.Affected(2)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := db.ExecContext(ctx, "EXEC slower"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
}

func TestDrop(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	db.SetMaxOpenConns(1)
	srv.Handle("EXEC flaky", mssqltest.Drop(), mssqltest.Affected(1))
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	_, err := db.Exec("EXEC flaky")
	if err == nil {
		t.Fatal("Drop: no error")
	}
	var me mssql.Error
	if errors.As(err, &me) {
		t.Fatalf("Drop surfaced as a server error: %v", err)
	}
	res, err := db.Exec("EXEC flaky")
	if err != nil {
		t.Fatalf("pool did not recover: %v", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("RowsAffected %d", n)
	}
	if got := srv.Logins(); got != 2 {
		t.Fatalf("Logins() = %d, want 2 (one new connection)", got)
	}
}

func TestFailLogin(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	srv.FailLogin(18456, 2)
	for i := 0; i < 2; i++ {
		err := db.Ping()
		var me mssql.Error
		if !errors.As(err, &me) || me.Number != 18456 || me.Class != 14 || !strings.Contains(me.Message, "Login failed for user 'sa'.") {
			t.Fatalf("ping %d: got %v", i, err)
		}
	}
	if err := db.Ping(); err != nil {
		t.Fatalf("third ping: %v", err)
	}
	if got := srv.Logins(); got != 3 {
		t.Fatalf("Logins() = %d, want 3", got)
	}
	srv.FailLogin(4060, 1)
	db2 := open(t, srv)
	err := db2.Ping()
	var me mssql.Error
	if !errors.As(err, &me) || me.Number != 4060 || me.Class != 11 {
		t.Fatalf("got %v", err)
	}
}

func TestTransactions(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	ctx := context.Background()

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO t VALUES (@p1)", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("UPDATE t SET a = 2"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	tx, err = db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("DELETE FROM t"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("SELECT outside"); err != nil {
		t.Fatal(err)
	}

	if got := fmt.Sprint(srv.Committed()); got != "[[INSERT INTO t VALUES (@p1) UPDATE t SET a = 2]]" {
		t.Errorf("Committed() = %s", got)
	}
	if got := fmt.Sprint(srv.RolledBack()); got != "[[DELETE FROM t]]" {
		t.Errorf("RolledBack() = %s", got)
	}
	if srv.Commits() != 1 || srv.Rollbacks() != 1 {
		t.Errorf("Commits %d Rollbacks %d", srv.Commits(), srv.Rollbacks())
	}
	if got := srv.Count("BEGIN TRANSACTION"); got != 2 {
		t.Errorf("Count(BEGIN TRANSACTION) = %d", got)
	}
}

func TestDeadlockEndsTransaction(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	srv.Handle("UPDATE hot SET n = n + 1", mssqltest.Error(1205), mssqltest.Affected(1))

	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("SELECT before"); err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec("UPDATE hot SET n = n + 1")
	var me mssql.Error
	if !errors.As(err, &me) || me.Number != 1205 {
		t.Fatalf("got %v", err)
	}
	// The server ended the transaction: more work fails, rollback is a no-op.
	if _, err := tx.Exec("SELECT after"); err == nil {
		t.Fatal("statement after the deadlock ran inside a dead transaction")
	}
	if err := tx.Rollback(); err != nil {
		t.Fatalf("Rollback after deadlock: %v", err)
	}
	if got := fmt.Sprint(srv.RolledBack()); got != "[[SELECT before UPDATE hot SET n = n + 1]]" {
		t.Fatalf("RolledBack() = %s", got)
	}

	// The whole transaction again: it commits.
	tx, err = db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("SELECT before"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("UPDATE hot SET n = n + 1"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(srv.Committed()); got != "[[SELECT before UPDATE hot SET n = n + 1]]" {
		t.Fatalf("Committed() = %s", got)
	}
}

func TestDropInTransaction(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	srv.Handle("EXEC boom", mssqltest.Drop())
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("EXEC boom"); err == nil {
		t.Fatal("no error")
	}
	_ = tx.Rollback()
	// The server notices the lost session on its own goroutine.
	deadline := time.Now().Add(2 * time.Second)
	for srv.Rollbacks() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := fmt.Sprint(srv.RolledBack()); got != "[[EXEC boom]]" {
		t.Fatalf("RolledBack() = %s", got)
	}
}

func TestScriptedCommit(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	srv.Handle("COMMIT TRANSACTION", mssqltest.Error(40197), mssqltest.Affected(0))
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err == nil {
		t.Fatal("scripted commit failure did not surface")
	}
	if srv.Commits() != 0 {
		t.Fatal("failed commit recorded as committed")
	}
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
		t.Error(err)
	}
	for i := 0; i < n; i++ {
		if got := srv.Count(fmt.Sprintf("SELECT v FROM g%d WHERE k = @p1", i)); got != 20 {
			t.Errorf("Count(g%d) = %d", i, got)
		}
	}
	if got := srv.Logins(); got != n {
		t.Errorf("Logins() = %d, want %d", got, n)
	}
}

func TestReset(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	srv.Handle("EXEC x", mssqltest.Error(1205))
	_, _ = db.Exec("EXEC x")
	srv.Reset()
	if _, err := db.Exec("EXEC x"); err != nil {
		t.Fatal(err)
	}
	if got := srv.Statements(); len(got) != 1 || got[0] != "EXEC x" {
		t.Fatalf("Statements() = %q", got)
	}
}

func TestClose(t *testing.T) {
	srv, err := mssqltest.Start()
	if err != nil {
		t.Fatal(err)
	}
	db := open(t, srv)
	srv.Handle("EXEC forever", mssqltest.Hang())
	done := make(chan error, 1)
	go func() { _, err := db.Exec("EXEC forever"); done <- err }()
	for srv.Count("EXEC forever") == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Fatal("hung statement succeeded after Close")
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
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
		if err := db.QueryRow("SELECT big").Scan(&n, &s); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("first row %d", n)
		}
	}
	r, err := db.Query("SELECT big")
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for r.Next() {
		count++
	}
	if err := r.Err(); err != nil || count != len(rows) {
		t.Fatalf("read %d rows, %v", count, err)
	}
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
}

// db.Ping sends "select 1;"; trailing semicolons do not matter in scripts.
func TestPingIsScriptable(t *testing.T) {
	srv := mssqltest.NewServer(t)
	db := open(t, srv)
	srv.Handle("SELECT 1", mssqltest.Error(40613), mssqltest.Affected(0))
	var me mssql.Error
	if err := db.Ping(); !errors.As(err, &me) || me.Number != 40613 {
		t.Fatalf("first ping: %v", err)
	}
	if err := db.Ping(); err != nil {
		t.Fatalf("second ping: %v", err)
	}
	if got := srv.Count("select 1;"); got != 2 {
		t.Fatalf("Count = %d", got)
	}
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
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nc.Write(garbage); err != nil {
			t.Fatal(err)
		}
		_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		// Closed is EOF, or a reset when the server left bytes unread.
		var ne net.Error
		if _, err := io.ReadAll(nc); errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("%q: connection not closed: %v", garbage, err)
		}
		nc.Close()
	}
	if err := open(t, srv).Ping(); err != nil {
		t.Fatal(err)
	}
}
