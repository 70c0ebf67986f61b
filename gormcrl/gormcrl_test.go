package gormcrl_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/require"
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
	// Replay off: these tests read the plugin's own units and helpers
	// (the driver layer's replay has tests of its own; opts may turn it on).
	opts = append([]gormcrl.Option{config.WithClock(clock), gormcrl.WithRetryExec(deadlockRules), config.WithTxReplay(false)}, opts...)
	db, err := gorm.Open(gormcrl.Open(sqlserver.Open(s.DSN()), opts...), cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return db, clock
}

// requireDeadlock fails unless errors.As finds SQL Server's deadlock
// error 1205 in err: also where go-mssqldb before v1.10 answers the
// ROLLBACK of the victim's transaction with 3903 and GORM keeps the
// deadlock's text only (crl returns an error that unwraps to it first).
func requireDeadlock(t *testing.T, err error, msgAndArgs ...any) {
	t.Helper()
	var e mssql.Error
	require.ErrorAs(t, err, &e, msgAndArgs...)
	require.Equal(t, int32(1205), e.Number, msgAndArgs...)
}

func wantSleeps(t *testing.T, c *coretest.Clock, want ...time.Duration) {
	t.Helper()
	got := c.Sleeps()
	if len(got) == 0 && len(want) == 0 {
		return // none either way, nil or empty
	}
	require.Equal(t, want, got, "waits")
}

func wantTxs(t *testing.T, what string, got [][]string, want ...[]string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	require.Equal(t, want, got, "%s transactions", what)
}

func TestFirstRetried(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, clock := open(t, s, nil)
	s.Handle(selectFirst, mssqltest.Error(1205), mssqltest.Error(1205), orderRow(7, "pen"))

	var o Order
	require.NoError(t, db.First(&o, 7).Error)
	require.Equal(t, Order{ID: 7, Name: "pen"}, o)
	require.Equal(t, 3, s.Count(selectFirst), "executions")
	wantSleeps(t, clock, 10*time.Millisecond, 20*time.Millisecond)
}

func TestFindRetried(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, clock := open(t, s, nil)
	s.Handle(selectAll, mssqltest.Error(1205), mssqltest.Rows([]string{"id", "name"}, []any{int64(1), "a"}, []any{int64(2), "b"}))

	var orders []Order
	res := db.Find(&orders)
	require.NoError(t, res.Error)
	require.Len(t, orders, 2)
	require.Equal(t, int64(2), res.RowsAffected, "RowsAffected")
	require.Equal(t, 2, s.Count(selectAll), "executions")
	wantSleeps(t, clock, 10*time.Millisecond)
}

// The attempt of a query is the driver layer's, and it ends at the first
// row: an error before it is retried with the query; one after it, met
// while GORM scans the rows, surfaces as it would with database/sql alone
// (gormcrl has no statement loop of its own).
func TestFindRetryEndsAtTheFirstRow(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, clock := open(t, s, nil)
	cols := []string{"id", "name"}
	s.Handle(selectAll, mssqltest.RowsThenError(1205, cols), mssqltest.Rows(cols, []any{int64(1), "a"}))
	var orders []Order
	require.NoError(t, db.Find(&orders).Error, "before the first row")
	require.Len(t, orders, 1)
	require.Equal(t, 2, s.Count(selectAll), "executions")
	wantSleeps(t, clock, 10*time.Millisecond)

	s.Handle(selectAll, mssqltest.RowsThenError(1205, cols, []any{int64(1), "a"}), mssqltest.Rows(cols, []any{int64(1), "a"}))
	orders = nil
	requireDeadlock(t, db.Find(&orders).Error, "after the first row")
	require.Equal(t, 3, s.Count(selectAll), "not retried")
	wantSleeps(t, clock, 10*time.Millisecond)
}

func TestRawRowAndExecRetried(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil)
	const raw = "SELECT name FROM orders WHERE id = @p1"
	const exec = "UPDATE orders SET name = 'x'"

	s.Handle(raw, mssqltest.Error(1205), mssqltest.Rows([]string{"name"}, []any{"pen"}))
	var name string
	require.NoError(t, db.Raw("SELECT name FROM orders WHERE id = ?", 7).Scan(&name).Error, "Raw.Scan")
	require.Equal(t, "pen", name, "Raw.Scan")
	require.Equal(t, 2, s.Count(raw), "Raw: executions")

	s.Reset()
	s.Handle(raw, mssqltest.Error(1205), mssqltest.Rows([]string{"name"}, []any{"cup"}))
	require.NoError(t, db.Raw("SELECT name FROM orders WHERE id = ?", 7).Row().Scan(&name), "Raw.Row")
	require.Equal(t, "cup", name, "Raw.Row")
	require.Equal(t, 2, s.Count(raw), "Row: executions")

	s.Handle(exec, mssqltest.Error(1205), mssqltest.Affected(3))
	res := db.Exec(exec)
	require.NoError(t, res.Error, "Exec")
	require.Equal(t, int64(3), res.RowsAffected, "Exec: RowsAffected")
	require.Equal(t, 2, s.Count(exec), "Exec: executions")
	wantTxs(t, "committed", s.Committed())
}

func TestExhaustedAndFilter(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, clock := open(t, s, nil)
	s.Handle(selectFirst, mssqltest.Error(1205))
	var o Order
	err := db.First(&o, 7).Error
	requireDeadlock(t, err)
	require.ErrorIs(t, err, core.ErrRetriesExhausted)
	require.Equal(t, 4, s.Count(selectFirst), "executions")
	wantSleeps(t, clock, 10*time.Millisecond, 20*time.Millisecond, 40*time.Millisecond)

	// A filter that does not name SELECT leaves it alone.
	s2 := mssqltest.NewServer(t)
	db2, clock2 := open(t, s2, nil, gormcrl.WithRetryExec("{1205:3,10ms:update,insert}"))
	s2.Handle(selectFirst, mssqltest.Error(1205), orderRow(7, "pen"))
	err = db2.First(&o, 7).Error
	var re *core.RetryError
	requireDeadlock(t, err)
	require.False(t, errors.As(err, &re), "the deadlock is returned unchanged, not in a *core.RetryError: %v", err)
	require.Equal(t, 1, s2.Count(selectFirst), "executions")
	wantSleeps(t, clock2)
}

func TestCreateRetriedAsWholeUnit(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, clock := open(t, s, nil)
	s.Handle(insertOrder, mssqltest.Error(1205), idRow(8))

	o := Order{Name: "pen"}
	res := db.Create(&o)
	require.NoError(t, res.Error, "Create")
	require.Equal(t, int64(1), res.RowsAffected, "Create: RowsAffected")
	require.Equal(t, int64(8), o.ID, "ID from the retry's OUTPUT INSERTED")
	require.Equal(t, 2, s.Count(insertOrder), "INSERTs")
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
	require.NoError(t, db.Create(&o).Error)
	// The first attempt's INSERT returned 7, then its transaction was rolled
	// back: the retry inserted again without an explicit ID (no IDENTITY_INSERT)
	// and got 8.
	require.Equal(t, int64(8), o.ID, "ID")
	require.Equal(t, 2, hooks, "AfterCreate runs")
	require.False(t, o.CreatedAt.IsZero(), "CreatedAt is set")
	require.Equal(t, 2, s.Count(insert), "INSERTs")
	for _, st := range s.Statements() {
		require.NotContains(t, st, "IDENTITY_INSERT", "the retry inserted the rolled-back ID")
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
	require.NoError(t, db.Create(&o).Error)
	require.Equal(t, int64(8), o.ID, "ID")
	require.Equal(t, 2, s.Count(insertOrder), "INSERTs")
	require.Len(t, s.Committed(), 1, "committed transactions")
}

func TestCreateCommitUnknownNotRetried(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, clock := open(t, s, nil, gormcrl.WithRetryExec("{1205,badconn:3,10ms}"))
	s.Handle(insertOrder, idRow(7))
	s.Handle("COMMIT TRANSACTION", mssqltest.Drop())

	o := Order{Name: "pen"}
	err := db.Create(&o).Error
	require.ErrorIs(t, err, core.ErrCommitUnknown)
	require.True(t, strings.HasPrefix(err.Error(), "gormcrl: "), "the message starts with the package: %v", err)
	require.Equal(t, 1, s.Count(insertOrder), "INSERTs")
	wantSleeps(t, clock)
}

func TestUpdateRetriedAsWholeUnit(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil)
	s.Handle(updateOrder, mssqltest.Error(1205), mssqltest.Affected(1))

	o := Order{ID: 7}
	res := db.Model(&o).Update("name", "cup")
	require.NoError(t, res.Error, "Update")
	require.Equal(t, int64(1), res.RowsAffected, "Update: RowsAffected")
	require.Equal(t, "cup", o.Name, "Update: the model")
	require.Equal(t, 2, s.Count(updateOrder), "UPDATEs")
	wantTxs(t, "committed", s.Committed(), []string{updateOrder})
	wantTxs(t, "rolled-back", s.RolledBack(), []string{updateOrder})
}

func TestSaveRetriedAsWholeUnit(t *testing.T) {
	const save = `UPDATE "orders" SET "name"=@p1 WHERE "id" = @p2`
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil)
	s.Handle(save, mssqltest.Error(1205), mssqltest.Affected(1))
	require.NoError(t, db.Save(&Order{ID: 7, Name: "cup"}).Error)
	wantTxs(t, "committed", s.Committed(), []string{save})
	wantTxs(t, "rolled-back", s.RolledBack(), []string{save})
}

func TestDeleteRetriedAsWholeUnit(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil)
	s.Handle(deleteOrder, mssqltest.Error(1205), mssqltest.Error(1205), mssqltest.Affected(1))

	res := db.Delete(&Order{ID: 7})
	require.NoError(t, res.Error, "Delete")
	require.Equal(t, int64(1), res.RowsAffected, "Delete: RowsAffected")
	wantTxs(t, "committed", s.Committed(), []string{deleteOrder})
	wantTxs(t, "rolled-back", s.RolledBack(), []string{deleteOrder}, []string{deleteOrder})
}

func TestWriteFilterChecksTheFailedStatement(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil, gormcrl.WithRetryExec("{1205:3,10ms:select}"))
	s.Handle(insertOrder, mssqltest.Error(1205), idRow(8))
	err := db.Create(&Order{Name: "pen"}).Error
	requireDeadlock(t, err)
	require.Equal(t, 1, s.Count(insertOrder), "INSERTs")
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
	requireDeadlock(t, err, "the deadlock, unchanged")
	require.Equal(t, 1, s.Count(insertInvoice), "invoice INSERTs")
	wantTxs(t, "committed", s.Committed())
	wantTxs(t, "rolled-back", s.RolledBack(), []string{insertInvoice, insertLines})
	wantSleeps(t, clock)

	// Without lines, the same model is retried as a whole unit.
	s.Reset()
	s.Handle(insertInvoice, mssqltest.Error(1205), idRow(6))
	inv = Invoice{Number: "A-2"}
	require.NoError(t, db.Create(&inv).Error, "Create without lines")
	require.Equal(t, int64(6), inv.ID, "Create without lines")
	wantTxs(t, "committed", s.Committed(), []string{insertInvoice})

	// Omitting the associations makes it retryable too.
	s.Reset()
	s.Handle(insertInvoice, mssqltest.Error(1205), idRow(7))
	inv = Invoice{Number: "A-3", Lines: []Line{{Item: "pen"}}}
	require.NoError(t, db.Omit(clause.Associations).Create(&inv).Error, "Create omitting lines")
	require.Equal(t, int64(7), inv.ID, "Create omitting lines")
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
	requireDeadlock(t, err)
	require.Equal(t, 1, s.Count(audit), "audit UPDATEs (never re-run alone)")
	wantTxs(t, "committed", s.Committed())
	wantTxs(t, "rolled-back", s.RolledBack(), []string{insertOrder, audit})

	// Begin: a query in the transaction is not retried either.
	s.Reset()
	s.Handle(selectFirst, mssqltest.Error(1205), orderRow(7, "pen"))
	tx := db.Begin()
	var o Order
	requireDeadlock(t, tx.First(&o, 7).Error)
	_ = tx.Rollback().Error
	require.Equal(t, 1, s.Count(selectFirst), "SELECTs")
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
	require.NoError(t, err)
	require.Equal(t, 2, calls, "runs of the closure")
	require.Equal(t, int64(8), o.ID, "ID")
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
	requireDeadlock(t, err)
	require.Equal(t, 1, calls, "runs of the closure")
}

func TestTransactionRollsBackOnErrorAndPanic(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil)
	boom := errors.New("boom")
	err := gormcrl.Transaction(db, func(tx *gorm.DB) error {
		tx.Create(&Order{Name: "pen"})
		return boom
	})
	require.ErrorIs(t, err, boom)
	func() {
		defer func() {
			require.Equal(t, "panic", recover(), "the closure's panic goes on")
		}()
		_ = gormcrl.Transaction(db, func(tx *gorm.DB) error {
			tx.Create(&Order{Name: "cup"})
			panic("panic")
		})
	}()
	wantTxs(t, "committed", s.Committed())
	require.Len(t, s.RolledBack(), 2, "rolled back")
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
	require.ErrorIs(t, err, core.ErrCommitUnknown)
	require.Equal(t, 1, calls, "runs of the closure")
}

func TestTransactionWithoutPlugin(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, err := gorm.Open(sqlserver.Open(s.DSN()), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	// A pool crl did not open: fn runs once, as db.Transaction runs it.
	calls := 0
	require.NoError(t, gormcrl.Transaction(db, func(*gorm.DB) error { calls++; return nil }))
	require.Equal(t, 1, calls, "runs of the closure")
}

func TestConnectionRetriedOnOpen(t *testing.T) {
	s := mssqltest.NewServer(t)
	s.FailLogin(40613, 1)
	db, clock := open(t, s, nil)
	require.Equal(t, 2, s.Logins(), "logins")
	wantSleeps(t, clock, 0) // the first connection retry is immediate

	// Every new pooled connection runs the loop, not only the first.
	sqlDB, _ := db.DB()
	sqlDB.SetMaxIdleConns(0)
	s.FailLogin(40613, 1)
	require.NoError(t, db.Exec("SELECT 1").Error)
	require.Equal(t, 4, s.Logins(), "logins")
}

func TestOpenReadsRulesFromTheDSN(t *testing.T) {
	s := mssqltest.NewServer(t)
	clock := coretest.NewClock(time.Time{})
	db, err := gorm.Open(gormcrl.Open(sqlserver.Open(s.DSN()+"&retryExec={1205:1,5ms}"), config.WithClock(clock)),
		&gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	s.Handle(selectFirst, mssqltest.Error(1205), orderRow(7, "pen"))
	var o Order
	require.NoError(t, db.First(&o, 7).Error)
	wantSleeps(t, clock, 5*time.Millisecond)

	// A malformed rule is gorm.Open's error.
	_, err = gorm.Open(gormcrl.Open(sqlserver.Open(s.DSN()+"&retryExec={1205:3,2AND2}")), &gorm.Config{Logger: logger.Discard})
	require.ErrorIs(t, err, core.ErrInvalidParameterNumber)
	require.True(t, strings.HasPrefix(err.Error(), "gormcrl: "), "the message starts with the package: %v", err)
}

func TestNoRetry(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, clock := open(t, s, nil)
	s.Handle(selectFirst, mssqltest.Error(1205), orderRow(7, "pen"))
	var o Order
	requireDeadlock(t, db.Clauses(gormcrl.NoRetry).WithContext(context.Background()).First(&o, 7).Error)
	require.Equal(t, 1, s.Count(selectFirst), "SELECTs")
	s.Handle(insertOrder, mssqltest.Error(1205), idRow(8))
	requireDeadlock(t, db.Clauses(gormcrl.NoRetry).Create(&Order{Name: "pen"}).Error)
	require.Equal(t, 1, s.Count(insertOrder), "INSERTs")
	wantSleeps(t, clock)
	// The same *gorm.DB without the clause retries.
	require.NoError(t, db.First(&o, 7).Error)
}

// createRetried opens GORM with cfg on a new server whose INSERT of an
// Order is a deadlock victim once, and creates an Order: the retry must
// write it, with the ID the second INSERT returns.
func createRetried(t *testing.T, cfg *gorm.Config) (*mssqltest.Server, *gorm.DB) {
	t.Helper()
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, cfg)
	s.Handle(insertOrder, mssqltest.Error(1205), idRow(8))
	o := Order{Name: "pen"}
	require.NoError(t, db.Create(&o).Error, "Create")
	require.Equal(t, int64(8), o.ID, "Create: ID")
	return s, db
}

func TestSkipDefaultTransactionRetriesEachStatement(t *testing.T) {
	s, _ := createRetried(t, &gorm.Config{SkipDefaultTransaction: true})
	require.Equal(t, 2, s.Count(insertOrder), "INSERTs")
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
	require.NoError(t, err)
	p := gormcrl.New(gormcrl.WithRetryExec(deadlockRules), config.WithClock(coretest.NewClock(time.Time{})))
	require.Equal(t, "crl:retry", p.Name())
	require.Nil(t, p.Retrier(), "before Initialize") // a *Plugin: no type assertion
	require.NoError(t, db.Use(p))
	require.NotNil(t, p.Retrier())
	require.NotNil(t, p.Runtime())
	require.NoError(t, p.Initialize(db))
	require.NoError(t, p.Initialize(db.Session(&gorm.Session{})))
	require.ErrorIs(t, db.Use(p), gorm.ErrRegistered, "second Use")
	for _, w := range log.warns {
		if strings.Contains(w, "crl:") {
			require.Fail(t, "GORM warned about a crl callback", w)
		}
	}
	s.Handle(insertOrder, mssqltest.Error(1205), idRow(8))
	require.NoError(t, db.Create(&Order{Name: "pen"}).Error)
	require.Equal(t, 2, s.Count(insertOrder), "INSERTs")
	wantTxs(t, "committed", s.Committed(), []string{insertOrder})
	require.NoError(t, gormcrl.Transaction(db, func(tx *gorm.DB) error { return nil }))
}

// A transaction begun by Transaction still tells GORM where its *sql.DB is.
func TestTransactionKeepsGormFeatures(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil)
	want, _ := db.DB()
	err := gormcrl.Transaction(db, func(tx *gorm.DB) error {
		got, err := tx.DB()
		if err != nil {
			return fmt.Errorf("tx.DB(): %w", err)
		}
		if got != want {
			return fmt.Errorf("tx.DB() = %p, want %p", got, want)
		}
		// A nested transaction is a savepoint.
		return tx.Transaction(func(tx *gorm.DB) error { return tx.Exec(audit).Error })
	}, &sql.TxOptions{Isolation: sql.LevelSerializable})
	require.NoError(t, err)
	got, err := db.Clauses(gormcrl.NoRetry).DB()
	require.NoError(t, err, "DB()")
	require.Same(t, want, got, "DB()")
}

func TestPrepareStmt(t *testing.T) {
	s, db := createRetried(t, &gorm.Config{PrepareStmt: true})
	wantTxs(t, "committed", s.Committed(), []string{insertOrder})
	wantTxs(t, "rolled-back", s.RolledBack(), []string{insertOrder})

	s.Handle(selectFirst, mssqltest.Error(1205), orderRow(7, "pen"))
	var got Order
	require.NoError(t, db.First(&got, 7).Error, "First")
	require.Equal(t, "pen", got.Name, "First")
	require.Equal(t, 2, s.Count(selectFirst), "SELECTs")
}

func TestNewReadsRulesFromTheDialectorDSN(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, err := gorm.Open(sqlserver.Open(s.DSN()+"&retryExec={1205:1,5ms}"), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	clock := coretest.NewClock(time.Time{})
	require.NoError(t, db.Use(gormcrl.New(config.WithClock(clock))))
	s.Handle(selectFirst, mssqltest.Error(1205), orderRow(7, "pen"))
	var o Order
	require.NoError(t, db.First(&o, 7).Error)
	wantSleeps(t, clock, 5*time.Millisecond)

	// A bad option is db.Use's error.
	db2, _ := gorm.Open(sqlserver.Open(s.DSN()), &gorm.Config{Logger: logger.Discard})
	require.ErrorIs(t, db2.Use(gormcrl.New(gormcrl.WithRetryExec("{1205}"))), core.ErrInvalidRuleFormat)
}

// otherDialector is a dialector this package does not know.
type otherDialector struct{ gorm.Dialector }

func TestOpenUnknownDialectorGetsThePluginOnly(t *testing.T) {
	s := mssqltest.NewServer(t)
	// Its pool is the dialector's own, which crl did not open: settings
	// for it are refused, naming the way to open it under crl.
	_, err := gorm.Open(gormcrl.Open(otherDialector{sqlserver.Open(s.DSN())},
		gormcrl.WithRetryExec(deadlockRules)), &gorm.Config{Logger: logger.Discard})
	require.ErrorContains(t, err, "crl.OpenDB")

	// Without settings it opens, and runs every statement once, as GORM.
	db, err := gorm.Open(gormcrl.Open(otherDialector{sqlserver.Open(s.DSN())}), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	s.Handle(selectFirst, mssqltest.Error(1205), orderRow(7, "pen"))
	var o Order
	var e mssql.Error
	require.ErrorAs(t, db.First(&o, 7).Error, &e)
	require.Equal(t, int32(1205), e.Number)
	require.Equal(t, 1, s.Count(selectFirst), "SELECTs")
	require.Equal(t, "sqlserver", db.Dialector.Name())
}

// A statement on a pinned connection (db.Connection, a *sql.Conn) is
// retried on that connection by crl's driver layer, which holds it during
// the wait, as the JDBC driver does (DESIGN.md, "Driver layer").
func TestConnectionIsRetriedOnItsConnection(t *testing.T) {
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil)
	s.Handle(selectFirst, mssqltest.Error(1205), orderRow(7, "pen"))
	var o Order
	err := db.Connection(func(tx *gorm.DB) error {
		return tx.First(&o, 7).Error
	})
	require.NoError(t, err)
	require.Equal(t, "pen", o.Name)
	require.Equal(t, 2, s.Count(selectFirst), "SELECTs")
}

func TestRetriedUpdateOfAMap(t *testing.T) {
	const upd = `UPDATE "orders" SET "name"=@p1 WHERE id = @p2`
	s := mssqltest.NewServer(t)
	db, _ := open(t, s, nil)
	s.Handle(upd, mssqltest.Error(1205), mssqltest.Affected(2))
	values := map[string]any{"name": "cup"}
	res := db.Model(&Order{}).Where("id = ?", 7).Updates(values)
	require.NoError(t, res.Error, "Updates")
	require.Equal(t, int64(2), res.RowsAffected, "Updates: RowsAffected")
	wantTxs(t, "committed", s.Committed(), []string{upd})
}
