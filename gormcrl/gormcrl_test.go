package gormcrl_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	mssql "github.com/microsoft/go-mssqldb"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/gormcrl"
	"github.com/crl-go/crl/mssqltest"
)

// Order is the model of most tests.
type Order struct {
	ID   int64
	Name string
}

// The statements GORM's sqlserver dialector sends for Order.
const (
	selectFirst = `SELECT * FROM "orders" WHERE "orders"."id" = @p1 ORDER BY "orders"."id" OFFSET 0 ROW FETCH NEXT 1 ROWS ONLY`
	selectAll   = `SELECT * FROM "orders"`
	insertOrder = `INSERT INTO "orders" ("name") OUTPUT INSERTED."id" VALUES (@p1);`
	updateOrder = `UPDATE "orders" SET "name"=@p1 WHERE "id" = @p2`
	deleteOrder = `DELETE FROM "orders" WHERE "orders"."id" = @p1`
	audit       = `UPDATE audit SET n = n + 1`
)

const deadlockRules = "{1205:3,10ms*2}"

func orderRow(id int64, name string) mssqltest.Reply {
	return mssqltest.Rows([]string{"id", "name"}, []any{id, name})
}

func idRow(id int64) mssqltest.Reply { return mssqltest.Rows([]string{"id"}, []any{id}) }

// open opens GORM through gormcrl.Open against s, with a virtual clock.
func open(t testing.TB, s *mssqltest.Server, cfg *gorm.Config, opts ...gormcrl.Option) (*gorm.DB, *coretest.Clock) {
	t.Helper()
	clock := coretest.NewClock(time.Time{})
	if cfg == nil {
		cfg = &gorm.Config{}
	}
	if cfg.Logger == nil {
		cfg.Logger = logger.Discard
	}
	opts = append([]gormcrl.Option{config.WithClock(clock), gormcrl.WithRetryExec(deadlockRules)}, opts...)
	db, err := gorm.Open(gormcrl.Open(sqlserver.Open(s.DSN()), opts...), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return db, clock
}

func isDeadlock(err error) bool {
	var e mssql.Error
	return errors.As(err, &e) && e.Number == 1205
}

func wantSleeps(t *testing.T, c *coretest.Clock, want ...time.Duration) {
	t.Helper()
	if got := c.Sleeps(); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("waits %v, want %v", got, want)
	}
}

func wantTxs(t *testing.T, what string, got [][]string, want ...[]string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s transactions:\n got %q\nwant %q", what, got, want)
	}
}

func TestFirstRetried(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, clock := open(t, s, nil)
	s.Handle(selectFirst, mssqltest.Error(1205), mssqltest.Error(1205), orderRow(7, "pen"))

	var o Order
	if err := db.First(&o, 7).Error; err != nil {
		t.Fatal(err)
	}
	if o != (Order{ID: 7, Name: "pen"}) {
		t.Fatalf("got %+v", o)
	}
	if n := s.Count(selectFirst); n != 3 {
		t.Fatalf("%d executions, want 3", n)
	}
	wantSleeps(t, clock, 10*time.Millisecond, 20*time.Millisecond)
}

func TestFindRetried(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, clock := open(t, s, nil)
	s.Handle(selectAll, mssqltest.Error(1205), mssqltest.Rows([]string{"id", "name"}, []any{int64(1), "a"}, []any{int64(2), "b"}))

	var orders []Order
	res := db.Find(&orders)
	if res.Error != nil || len(orders) != 2 || res.RowsAffected != 2 {
		t.Fatalf("err %v, orders %+v, rows %d", res.Error, orders, res.RowsAffected)
	}
	if n := s.Count(selectAll); n != 2 {
		t.Fatalf("%d executions, want 2", n)
	}
	wantSleeps(t, clock, 10*time.Millisecond)
}

func TestRawRowAndExecRetried(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil)
	const raw = "SELECT name FROM orders WHERE id = @p1"
	const exec = "UPDATE orders SET name = 'x'"

	s.Handle(raw, mssqltest.Error(1205), mssqltest.Rows([]string{"name"}, []any{"pen"}))
	var name string
	if err := db.Raw("SELECT name FROM orders WHERE id = ?", 7).Scan(&name).Error; err != nil || name != "pen" {
		t.Fatalf("Raw.Scan: %q, %v", name, err)
	}
	if n := s.Count(raw); n != 2 {
		t.Fatalf("Raw: %d executions, want 2", n)
	}

	s.Reset()
	s.Handle(raw, mssqltest.Error(1205), mssqltest.Rows([]string{"name"}, []any{"cup"}))
	if err := db.Raw("SELECT name FROM orders WHERE id = ?", 7).Row().Scan(&name); err != nil || name != "cup" {
		t.Fatalf("Raw.Row: %q, %v", name, err)
	}
	if n := s.Count(raw); n != 2 {
		t.Fatalf("Row: %d executions, want 2", n)
	}

	s.Handle(exec, mssqltest.Error(1205), mssqltest.Affected(3))
	res := db.Exec(exec)
	if res.Error != nil || res.RowsAffected != 3 {
		t.Fatalf("Exec: %v, rows %d", res.Error, res.RowsAffected)
	}
	if n := s.Count(exec); n != 2 {
		t.Fatalf("Exec: %d executions, want 2", n)
	}
	wantTxs(t, "committed", s.Committed())
}

func TestExhaustedAndFilter(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, clock := open(t, s, nil)
	s.Handle(selectFirst, mssqltest.Error(1205))
	var o Order
	err := db.First(&o, 7).Error
	if !isDeadlock(err) || !errors.Is(err, core.ErrRetriesExhausted) {
		t.Fatalf("got %v, want the deadlock after retries exhausted", err)
	}
	if n := s.Count(selectFirst); n != 4 {
		t.Fatalf("%d executions, want 4", n)
	}
	wantSleeps(t, clock, 10*time.Millisecond, 20*time.Millisecond, 40*time.Millisecond)

	// A filter that does not name SELECT leaves it alone.
	s2 := mssqltest.NewServer(t)
	db2, clock2 := open(t, s2, nil, gormcrl.WithRetryExec("{1205:3,10ms:update,insert}"))
	s2.Handle(selectFirst, mssqltest.Error(1205), orderRow(7, "pen"))
	err = db2.First(&o, 7).Error
	var re *core.RetryError
	if !isDeadlock(err) || errors.As(err, &re) {
		t.Fatalf("got %v, want the deadlock unchanged", err)
	}
	if n := s2.Count(selectFirst); n != 1 {
		t.Fatalf("%d executions, want 1", n)
	}
	wantSleeps(t, clock2)
}

func TestCreateRetriedAsWholeUnit(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, clock := open(t, s, nil)
	s.Handle(insertOrder, mssqltest.Error(1205), idRow(8))

	o := Order{Name: "pen"}
	res := db.Create(&o)
	if res.Error != nil || res.RowsAffected != 1 {
		t.Fatalf("Create: %v, rows %d", res.Error, res.RowsAffected)
	}
	if o.ID != 8 {
		t.Fatalf("ID %d, want 8 (from the retry's OUTPUT INSERTED)", o.ID)
	}
	if n := s.Count(insertOrder); n != 2 {
		t.Fatalf("%d INSERTs, want 2", n)
	}
	wantTxs(t, "committed", s.Committed(), []string{insertOrder})
	wantTxs(t, "rolled-back", s.RolledBack(), []string{insertOrder})
	wantSleeps(t, clock, 10*time.Millisecond)
}

// AuditedOrder's AfterCreate hook writes in GORM's transaction: a deadlock
// there comes after the INSERT returned its ID.
type AuditedOrder struct {
	ID        int64
	Name      string
	CreatedAt time.Time
	hooks     *int
}

func (o *AuditedOrder) AfterCreate(tx *gorm.DB) error {
	if o.hooks != nil {
		*o.hooks++
	}
	return tx.Exec(audit).Error
}

func TestCreateRetryStartsFromTheCallersValue(t *testing.T) {
	const insert = `INSERT INTO "audited_orders" ("name","created_at") OUTPUT INSERTED."id" VALUES (@p1,@p2);`
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil)
	s.Handle(insert, idRow(7), idRow(8))
	s.Handle(audit, mssqltest.Error(1205), mssqltest.Affected(1))

	hooks := 0
	o := AuditedOrder{Name: "pen", hooks: &hooks}
	if err := db.Create(&o).Error; err != nil {
		t.Fatal(err)
	}
	// The first attempt's INSERT returned 7, then its transaction was rolled
	// back: the retry inserted again without an explicit ID (no IDENTITY_INSERT)
	// and got 8.
	if o.ID != 8 || hooks != 2 || o.CreatedAt.IsZero() {
		t.Fatalf("got %+v after %d hooks, want ID 8 after 2", o, hooks)
	}
	if n := s.Count(insert); n != 2 {
		t.Fatalf("%d INSERTs, want 2", n)
	}
	for _, st := range s.Statements() {
		if strings.Contains(st, "IDENTITY_INSERT") {
			t.Fatalf("the retry inserted the rolled-back ID: %q", st)
		}
	}
	wantTxs(t, "committed", s.Committed(), []string{insert, audit})
	wantTxs(t, "rolled-back", s.RolledBack(), []string{insert, audit})
}

func TestCreateCommitRefusedRetried(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil, gormcrl.WithRetryExec("{1205,40197:3,10ms}"))
	s.Handle(insertOrder, idRow(7), idRow(8))
	s.Handle("COMMIT TRANSACTION", mssqltest.Error(40197), mssqltest.Affected(0))

	o := Order{Name: "pen"}
	if err := db.Create(&o).Error; err != nil {
		t.Fatal(err)
	}
	if o.ID != 8 {
		t.Fatalf("ID %d, want 8", o.ID)
	}
	if n := s.Count(insertOrder); n != 2 {
		t.Fatalf("%d INSERTs, want 2", n)
	}
	if c := s.Committed(); len(c) != 1 {
		t.Fatalf("committed %q, want one transaction", c)
	}
}

func TestCreateCommitUnknownNotRetried(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, clock := open(t, s, nil, gormcrl.WithRetryExec("{1205,badconn:3,10ms}"))
	s.Handle(insertOrder, idRow(7))
	s.Handle("COMMIT TRANSACTION", mssqltest.Drop())

	o := Order{Name: "pen"}
	err := db.Create(&o).Error
	if !errors.Is(err, core.ErrCommitUnknown) || !strings.HasPrefix(err.Error(), "gormcrl: ") {
		t.Fatalf("got %v, want core.ErrCommitUnknown", err)
	}
	if n := s.Count(insertOrder); n != 1 {
		t.Fatalf("%d INSERTs, want 1", n)
	}
	wantSleeps(t, clock)
}

func TestUpdateRetriedAsWholeUnit(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil)
	s.Handle(updateOrder, mssqltest.Error(1205), mssqltest.Affected(1))

	o := Order{ID: 7}
	res := db.Model(&o).Update("name", "cup")
	if res.Error != nil || res.RowsAffected != 1 || o.Name != "cup" {
		t.Fatalf("Update: %v, rows %d, %+v", res.Error, res.RowsAffected, o)
	}
	if n := s.Count(updateOrder); n != 2 {
		t.Fatalf("%d UPDATEs, want 2", n)
	}
	wantTxs(t, "committed", s.Committed(), []string{updateOrder})
	wantTxs(t, "rolled-back", s.RolledBack(), []string{updateOrder})
}

func TestSaveRetriedAsWholeUnit(t *testing.T) {
	const save = `UPDATE "orders" SET "name"=@p1 WHERE "id" = @p2`
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil)
	s.Handle(save, mssqltest.Error(1205), mssqltest.Affected(1))
	if err := db.Save(&Order{ID: 7, Name: "cup"}).Error; err != nil {
		t.Fatal(err)
	}
	wantTxs(t, "committed", s.Committed(), []string{save})
	wantTxs(t, "rolled-back", s.RolledBack(), []string{save})
}

func TestDeleteRetriedAsWholeUnit(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil)
	s.Handle(deleteOrder, mssqltest.Error(1205), mssqltest.Error(1205), mssqltest.Affected(1))

	res := db.Delete(&Order{ID: 7})
	if res.Error != nil || res.RowsAffected != 1 {
		t.Fatalf("Delete: %v, rows %d", res.Error, res.RowsAffected)
	}
	wantTxs(t, "committed", s.Committed(), []string{deleteOrder})
	wantTxs(t, "rolled-back", s.RolledBack(), []string{deleteOrder}, []string{deleteOrder})
}

func TestWriteFilterChecksTheFailedStatement(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil, gormcrl.WithRetryExec("{1205:3,10ms:select}"))
	s.Handle(insertOrder, mssqltest.Error(1205), idRow(8))
	err := db.Create(&Order{Name: "pen"}).Error
	if !isDeadlock(err) {
		t.Fatalf("got %v, want the deadlock", err)
	}
	if n := s.Count(insertOrder); n != 1 {
		t.Fatalf("%d INSERTs, want 1", n)
	}
}

// Invoice has lines: GORM saves them with the invoice, in its transaction.
type Invoice struct {
	ID     int64
	Number string
	Lines  []Line
}

type Line struct {
	ID        int64
	InvoiceID int64
	Item      string
}

const (
	insertInvoice = `INSERT INTO "invoices" ("number") OUTPUT INSERTED."id" VALUES (@p1);`
	insertLines   = `INSERT INTO "lines" ("invoice_id","item") OUTPUT INSERTED."id" VALUES (@p1,@p2),(@p3,@p4);`
)

// A Create that saves associations is not retried at all: the rows and keys
// of the associated values cannot be put back safely. It still runs in
// GORM's transaction, rolled back as a whole.
func TestCreateWithAssociationsNotRetried(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, clock := open(t, s, nil)
	s.Handle(insertInvoice, idRow(5), idRow(6))
	s.Handle(insertLines, mssqltest.Error(1205), mssqltest.Rows([]string{"id"}, []any{int64(1)}, []any{int64(2)}))

	inv := Invoice{Number: "A-1", Lines: []Line{{Item: "pen"}, {Item: "cup"}}}
	err := db.Create(&inv).Error
	if !isDeadlock(err) {
		t.Fatalf("got %v, want the deadlock, unchanged", err)
	}
	if n := s.Count(insertInvoice); n != 1 {
		t.Fatalf("%d invoice INSERTs, want 1", n)
	}
	wantTxs(t, "committed", s.Committed())
	wantTxs(t, "rolled-back", s.RolledBack(), []string{insertInvoice, insertLines})
	wantSleeps(t, clock)

	// Without lines, the same model is retried as a whole unit.
	s.Reset()
	s.Handle(insertInvoice, mssqltest.Error(1205), idRow(6))
	inv = Invoice{Number: "A-2"}
	if err := db.Create(&inv).Error; err != nil || inv.ID != 6 {
		t.Fatalf("Create without lines: %v, %+v", err, inv)
	}
	wantTxs(t, "committed", s.Committed(), []string{insertInvoice})

	// Omitting the associations makes it retryable too.
	s.Reset()
	s.Handle(insertInvoice, mssqltest.Error(1205), idRow(7))
	inv = Invoice{Number: "A-3", Lines: []Line{{Item: "pen"}}}
	if err := db.Omit(clause.Associations).Create(&inv).Error; err != nil || inv.ID != 7 {
		t.Fatalf("Create omitting lines: %v, %+v", err, inv)
	}
	wantTxs(t, "committed", s.Committed(), []string{insertInvoice})
}

func TestExplicitTransactionNotRetriedPerStatement(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, clock := open(t, s, nil)
	s.Handle(insertOrder, idRow(7))
	s.Handle(audit, mssqltest.Error(1205), mssqltest.Affected(1))

	err := db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&Order{Name: "pen"}).Error; err != nil {
			return err
		}
		return tx.Exec(audit).Error
	})
	if !isDeadlock(err) {
		t.Fatalf("got %v, want the deadlock", err)
	}
	if n := s.Count(audit); n != 1 {
		t.Fatalf("%d audit UPDATEs, want 1 (never re-run alone)", n)
	}
	wantTxs(t, "committed", s.Committed())
	wantTxs(t, "rolled-back", s.RolledBack(), []string{insertOrder, audit})

	// Begin: a query in the transaction is not retried either.
	s.Reset()
	s.Handle(selectFirst, mssqltest.Error(1205), orderRow(7, "pen"))
	tx := db.Begin()
	var o Order
	if err := tx.First(&o, 7).Error; !isDeadlock(err) {
		t.Fatalf("got %v, want the deadlock", err)
	}
	_ = tx.Rollback().Error
	if n := s.Count(selectFirst); n != 1 {
		t.Fatalf("%d SELECTs, want 1", n)
	}
	wantSleeps(t, clock)
}

func TestTransactionRetriesTheClosure(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, clock := open(t, s, nil)
	s.Handle(insertOrder, idRow(7), idRow(8))
	s.Handle(audit, mssqltest.Error(1205), mssqltest.Affected(1))

	calls := 0
	var o Order
	err := gormcrl.Transaction(db, func(tx *gorm.DB) error {
		calls++
		o = Order{Name: "pen"}
		if err := tx.Create(&o).Error; err != nil {
			return err
		}
		return tx.Exec(audit).Error
	})
	if err != nil || calls != 2 || o.ID != 8 {
		t.Fatalf("err %v, %d calls, %+v", err, calls, o)
	}
	wantTxs(t, "committed", s.Committed(), []string{insertOrder, audit})
	wantTxs(t, "rolled-back", s.RolledBack(), []string{insertOrder, audit})
	wantSleeps(t, clock, 10*time.Millisecond)
}

func TestTransactionFilterChecksTheFailedStatement(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil, gormcrl.WithRetryExec("{1205:3,10ms:insert}"))
	s.Handle(audit, mssqltest.Error(1205), mssqltest.Affected(1))
	calls := 0
	err := gormcrl.Transaction(db, func(tx *gorm.DB) error {
		calls++
		if err := tx.Create(&Order{Name: "pen"}).Error; err != nil {
			return err
		}
		return tx.Exec(audit).Error // fails: an UPDATE, which the filter does not name
	})
	if !isDeadlock(err) || calls != 1 {
		t.Fatalf("err %v after %d calls, want the deadlock after 1", err, calls)
	}
}

func TestTransactionRollsBackOnErrorAndPanic(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil)
	boom := errors.New("boom")
	err := gormcrl.Transaction(db, func(tx *gorm.DB) error {
		tx.Create(&Order{Name: "pen"})
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	func() {
		defer func() {
			if p := recover(); p != "panic" {
				t.Fatalf("recovered %v", p)
			}
		}()
		_ = gormcrl.Transaction(db, func(tx *gorm.DB) error {
			tx.Create(&Order{Name: "cup"})
			panic("panic")
		})
	}()
	wantTxs(t, "committed", s.Committed())
	if n := len(s.RolledBack()); n != 2 {
		t.Fatalf("%d rolled back, want 2", n)
	}
}

func TestTransactionCommitUnknown(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil, gormcrl.WithRetryExec("{1205,badconn:3,10ms}"))
	s.Handle("COMMIT TRANSACTION", mssqltest.Drop())
	calls := 0
	err := gormcrl.Transaction(db, func(tx *gorm.DB) error {
		calls++
		return tx.Exec(audit).Error
	})
	if !errors.Is(err, core.ErrCommitUnknown) || calls != 1 {
		t.Fatalf("err %v after %d calls", err, calls)
	}
}

func TestTransactionWithoutPlugin(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, err := gorm.Open(sqlserver.Open(s.DSN()), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := gormcrl.Transaction(db, func(*gorm.DB) error { return nil }); !errors.Is(err, gormcrl.ErrNoPlugin) {
		t.Fatalf("got %v", err)
	}
}

func TestConnectionRetriedOnOpen(t *testing.T) {
	s := mssqltest.NewServer(t)
	s.FailLogin(40613, 1)
	db, clock := open(t, s, nil)
	if n := s.Logins(); n != 2 {
		t.Fatalf("%d logins, want 2", n)
	}
	wantSleeps(t, clock, 0) // the first connection retry is immediate

	// Every new pooled connection runs the loop, not only the first.
	sqlDB, _ := db.DB()
	sqlDB.SetMaxIdleConns(0)
	s.FailLogin(40613, 1)
	if err := db.Exec("SELECT 1").Error; err != nil {
		t.Fatal(err)
	}
	if n := s.Logins(); n != 4 {
		t.Fatalf("%d logins, want 4", n)
	}
}

func TestOpenReadsRulesFromTheDSN(t *testing.T) {
	s := mssqltest.NewServer(t)
	clock := coretest.NewClock(time.Time{})
	db, err := gorm.Open(gormcrl.Open(sqlserver.Open(s.DSN()+"&retryExec={1205:1,5ms}"), config.WithClock(clock)),
		&gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	s.Handle(selectFirst, mssqltest.Error(1205), orderRow(7, "pen"))
	var o Order
	if err := db.First(&o, 7).Error; err != nil {
		t.Fatal(err)
	}
	wantSleeps(t, clock, 5*time.Millisecond)

	// A malformed rule is gorm.Open's error.
	_, err = gorm.Open(gormcrl.Open(sqlserver.Open(s.DSN()+"&retryExec={1205:3,2AND2}")), &gorm.Config{Logger: logger.Discard})
	if !errors.Is(err, core.ErrInvalidParameterNumber) || !strings.HasPrefix(err.Error(), "gormcrl: ") {
		t.Fatalf("got %v", err)
	}
}

func TestNoRetry(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, clock := open(t, s, nil)
	s.Handle(selectFirst, mssqltest.Error(1205), orderRow(7, "pen"))
	var o Order
	if err := db.Clauses(gormcrl.NoRetry).WithContext(context.Background()).First(&o, 7).Error; !isDeadlock(err) {
		t.Fatalf("got %v, want the deadlock", err)
	}
	if n := s.Count(selectFirst); n != 1 {
		t.Fatalf("%d SELECTs, want 1", n)
	}
	s.Handle(insertOrder, mssqltest.Error(1205), idRow(8))
	if err := db.Clauses(gormcrl.NoRetry).Create(&Order{Name: "pen"}).Error; !isDeadlock(err) {
		t.Fatalf("got %v, want the deadlock", err)
	}
	if n := s.Count(insertOrder); n != 1 {
		t.Fatalf("%d INSERTs, want 1", n)
	}
	wantSleeps(t, clock)
	// The same *gorm.DB without the clause retries.
	if err := db.First(&o, 7).Error; err != nil {
		t.Fatal(err)
	}
}

func TestSkipDefaultTransactionRetriesEachStatement(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, &gorm.Config{SkipDefaultTransaction: true})
	s.Handle(insertOrder, mssqltest.Error(1205), idRow(8))
	o := Order{Name: "pen"}
	if err := db.Create(&o).Error; err != nil || o.ID != 8 {
		t.Fatalf("Create: %v, %+v", err, o)
	}
	if n := s.Count(insertOrder); n != 2 {
		t.Fatalf("%d INSERTs, want 2", n)
	}
	wantTxs(t, "committed", s.Committed())
}

// recordingLogger keeps GORM's warnings.
type recordingLogger struct {
	logger.Interface
	mu    sync.Mutex
	warns []string
}

func (l *recordingLogger) LogMode(logger.LogLevel) logger.Interface { return l }
func (l *recordingLogger) Warn(_ context.Context, msg string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.warns = append(l.warns, fmt.Sprintf(msg, args...))
}

func TestPluginInitializeIsIdempotent(t *testing.T) {
	s := mssqltest.NewServer(t)
	log := &recordingLogger{Interface: logger.Discard}
	db, err := gorm.Open(sqlserver.Open(s.DSN()), &gorm.Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	p := gormcrl.New(gormcrl.WithRetryExec(deadlockRules), config.WithClock(coretest.NewClock(time.Time{})))
	if p.Name() != "crl:retry" {
		t.Fatalf("name %q", p.Name())
	}
	if err := db.Use(p); err != nil {
		t.Fatal(err)
	}
	if err := p.Initialize(db); err != nil {
		t.Fatal(err)
	}
	if err := p.Initialize(db.Session(&gorm.Session{})); err != nil {
		t.Fatal(err)
	}
	if err := db.Use(p); !errors.Is(err, gorm.ErrRegistered) {
		t.Fatalf("second Use: %v", err)
	}
	for _, w := range log.warns {
		if strings.Contains(w, "crl:") {
			t.Fatalf("GORM warned: %s", w)
		}
	}
	s.Handle(insertOrder, mssqltest.Error(1205), idRow(8))
	if err := db.Create(&Order{Name: "pen"}).Error; err != nil {
		t.Fatal(err)
	}
	if n := s.Count(insertOrder); n != 2 {
		t.Fatalf("%d INSERTs, want 2", n)
	}
	wantTxs(t, "committed", s.Committed(), []string{insertOrder})
	if err := gormcrl.Transaction(db, func(tx *gorm.DB) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

// A transaction begun by Transaction still tells GORM where its *sql.DB is.
func TestTransactionKeepsGormFeatures(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil)
	want, _ := db.DB()
	err := gormcrl.Transaction(db, func(tx *gorm.DB) error {
		got, err := tx.DB()
		if err != nil || got != want {
			return fmt.Errorf("tx.DB() = %p, %v; want %p", got, err, want)
		}
		// A nested transaction is a savepoint.
		return tx.Transaction(func(tx *gorm.DB) error { return tx.Exec(audit).Error })
	}, &sql.TxOptions{Isolation: sql.LevelSerializable})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := db.Clauses(gormcrl.NoRetry).DB(); err != nil || got != want {
		t.Fatalf("DB() = %p, %v", got, err)
	}
}

func TestPrepareStmt(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, &gorm.Config{PrepareStmt: true})
	s.Handle(insertOrder, mssqltest.Error(1205), idRow(8))
	o := Order{Name: "pen"}
	if err := db.Create(&o).Error; err != nil || o.ID != 8 {
		t.Fatalf("Create: %v, %+v", err, o)
	}
	wantTxs(t, "committed", s.Committed(), []string{insertOrder})
	wantTxs(t, "rolled-back", s.RolledBack(), []string{insertOrder})

	s.Handle(selectFirst, mssqltest.Error(1205), orderRow(7, "pen"))
	var got Order
	if err := db.First(&got, 7).Error; err != nil || got.Name != "pen" {
		t.Fatalf("First: %v, %+v", err, got)
	}
	if n := s.Count(selectFirst); n != 2 {
		t.Fatalf("%d SELECTs, want 2", n)
	}
}

func TestNewReadsRulesFromTheDialectorDSN(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, err := gorm.Open(sqlserver.Open(s.DSN()+"&retryExec={1205:1,5ms}"), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	clock := coretest.NewClock(time.Time{})
	if err := db.Use(gormcrl.New(config.WithClock(clock))); err != nil {
		t.Fatal(err)
	}
	s.Handle(selectFirst, mssqltest.Error(1205), orderRow(7, "pen"))
	var o Order
	if err := db.First(&o, 7).Error; err != nil {
		t.Fatal(err)
	}
	wantSleeps(t, clock, 5*time.Millisecond)

	// A bad option is db.Use's error.
	db2, _ := gorm.Open(sqlserver.Open(s.DSN()), &gorm.Config{Logger: logger.Discard})
	if err := db2.Use(gormcrl.New(gormcrl.WithRetryExec("{1205}"))); !errors.Is(err, core.ErrInvalidRuleFormat) {
		t.Fatalf("got %v", err)
	}
}

// otherDialector is a dialector this package does not know.
type otherDialector struct{ gorm.Dialector }

func TestOpenUnknownDialectorGetsThePluginOnly(t *testing.T) {
	s := mssqltest.NewServer(t)
	s.FailLogin(40613, 1)
	clock := coretest.NewClock(time.Time{})
	_, err := gorm.Open(gormcrl.Open(otherDialector{sqlserver.Open(s.DSN())}, config.WithClock(clock),
		gormcrl.WithRetryExec(deadlockRules)), &gorm.Config{Logger: logger.Discard})
	var e mssql.Error
	if !errors.As(err, &e) || e.Number != 40613 {
		t.Fatalf("got %v, want the login failure (connections are not wrapped)", err)
	}
	db, err := gorm.Open(gormcrl.Open(otherDialector{sqlserver.Open(s.DSN())}, config.WithClock(clock),
		gormcrl.WithRetryExec(deadlockRules)), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	s.Handle(selectFirst, mssqltest.Error(1205), orderRow(7, "pen"))
	var o Order
	if err := db.First(&o, 7).Error; err != nil {
		t.Fatal(err)
	}
	if db.Dialector.Name() != "sqlserver" {
		t.Fatalf("name %q", db.Dialector.Name())
	}
}

func TestConnectionIsNotRetried(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil)
	s.Handle(selectFirst, mssqltest.Error(1205), orderRow(7, "pen"))
	err := db.Connection(func(tx *gorm.DB) error {
		var o Order
		return tx.First(&o, 7).Error
	})
	if !isDeadlock(err) || s.Count(selectFirst) != 1 {
		t.Fatalf("got %v after %d SELECTs", err, s.Count(selectFirst))
	}
}

func TestRetriedUpdateOfAMap(t *testing.T) {
	const upd = `UPDATE "orders" SET "name"=@p1 WHERE id = @p2`
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil)
	s.Handle(upd, mssqltest.Error(1205), mssqltest.Affected(2))
	values := map[string]any{"name": "cup"}
	res := db.Model(&Order{}).Where("id = ?", 7).Updates(values)
	if res.Error != nil || res.RowsAffected != 2 {
		t.Fatalf("Updates: %v, rows %d", res.Error, res.RowsAffected)
	}
	wantTxs(t, "committed", s.Committed(), []string{upd})
}
