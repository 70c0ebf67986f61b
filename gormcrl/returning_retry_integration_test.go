package gormcrl_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/conformance"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/gormcrl"
)

// gormpItem has an ID and a default the database fills in: GORM reads
// both back (RETURNING), so they are what a failed attempt may have
// written to the value.
type gormpItem struct {
	ID   int64  `gorm:"primaryKey;autoIncrement"`
	Code string `gorm:"size:32"`
	Name string `gorm:"size:32;uniqueIndex"`
	Note string `gorm:"size:32;default:fresh"`
}

// retryLog records the retries the statement and transaction loops
// scheduled.
type retryLog struct {
	core.NopObserver
	mu      sync.Mutex
	retries []core.RetryScheduled
}

func (l *retryLog) RetryScheduled(e core.RetryScheduled) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.retries = append(l.retries, e)
}

func (l *retryLog) all() []core.RetryScheduled {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]core.RetryScheduled(nil), l.retries...)
}

// returningCase is one way of writing: GORM's implicit transaction or
// SkipDefaultTransaction, one value or a slice.
type returningCase struct {
	name  string
	skip  bool // SkipDefaultTransaction
	names []string
}

var returningCases = []returningCase{
	{"alone/one", true, []string{"held"}},
	{"alone/slice", true, []string{"free", "held"}},
	{"unit/one", false, []string{"held"}},
	{"unit/slice", false, []string{"free", "held"}},
}

// createItems creates the names as one value or as a slice, and returns
// the values as GORM left them.
func createItems(db *gorm.DB, names []string) ([]gormpItem, error) {
	if len(names) == 1 {
		item := gormpItem{Code: "c_" + names[0], Name: names[0]}
		err := db.Create(&item).Error
		return []gormpItem{item}, err
	}
	items := make([]gormpItem, len(names))
	for i, n := range names {
		items[i].Code, items[i].Name = "c_"+n, n
	}
	err := db.Create(&items).Error
	return items, err
}

// requireStoredOnce checks that each value is in the table once, with the
// ID and default GORM reported.
func requireStoredOnce(t *testing.T, tdb func() *gorm.DB, items []gormpItem) {
	t.Helper()
	var stored []gormpItem
	require.NoError(t, tdb().Order("id").Find(&stored).Error)
	require.Len(t, stored, len(items), "each row once: %+v", stored)
	byName := map[string]gormpItem{}
	for _, s := range stored {
		byName[s.Name] = s
	}
	for _, it := range items {
		assert.NotZero(t, it.ID, "GORM reports the ID of %q", it.Name)
		assert.Equal(t, byName[it.Name], it, "the value GORM wrote back is the stored row")
	}
}

// On MariaDB ≥ 10.5 GORM's Create is INSERT … RETURNING, and the lock
// wait time-out (1205) of a key another session holds arrives while GORM
// reads the returned rows, after the query call returned. Before the
// first row (one value) the driver layer's attempt, which ends at the
// first row, meets it and retries the statement; in GORM's implicit
// transaction the unit is retried whole. The IDs GORM reports are the
// stored ones, not those of the rows a failed attempt returned.
//
// The boundary: a slice written alone (SkipDefaultTransaction) returns
// the row of "free" before the INSERT of "held" waits, so the error
// arrives after the first row, past the layer's attempt: it surfaces as
// it would with plain database/sql, and the server, which rolls back a
// failed statement whole, stored nothing.
func TestRealReturningLockWaitRetried(t *testing.T) {
	d := conformance.DatabaseNamed(t, "mariadb")
	for _, tc := range returningCases {
		t.Run(tc.name, func(t *testing.T) {
			log := &retryLog{}
			db, err := openGorm(d.Driver, d.With("innodb_lock_wait_timeout=1"),
				gormcrl.WithRetryExec("{1205:3,0:insert}"), config.WithObserver(log))
			require.NoError(t, err)
			table := conformance.Table("gormp_ret")
			tdb := func() *gorm.DB { return db.Table(table) }
			require.NoError(t, tdb().Migrator().CreateTable(&gormpItem{}))
			defer func() { _ = tdb().Migrator().DropTable(table) }()
			sqlDB, err := db.DB()
			require.NoError(t, err)
			var version string
			require.NoError(t, sqlDB.QueryRow("SELECT VERSION()").Scan(&version))

			// The holder takes the key "held" and lets go after the first
			// attempt's time-out (1 s; the Create may start up to 0.9 s
			// late on a loaded machine): the second attempt succeeds.
			released := conformance.Hold(t, sqlDB, "INSERT INTO "+table+" (name) VALUES ('held')", 1900*time.Millisecond)
			w := tdb()
			if tc.skip {
				w = w.Session(&gorm.Session{SkipDefaultTransaction: true})
			}
			start := time.Now()
			items, err := createItems(w, tc.names)
			require.NoError(t, <-released)
			if tc.skip && len(tc.names) > 1 {
				var e *gomysql.MySQLError
				require.ErrorAs(t, err, &e, "MariaDB %s", version)
				assert.Equal(t, uint16(1205), e.Number)
				assert.Empty(t, log.all(), "not retried")
				requireStoredOnce(t, tdb, nil)
				return
			}
			require.NoError(t, err, "MariaDB %s", version)
			assert.Greater(t, time.Since(start), time.Second, "the first attempt waited for the lock")
			retries := log.all()
			require.NotEmpty(t, retries, "a retry was scheduled")
			assert.Contains(t, retries[0].Query, "INSERT INTO", "the failed statement is the INSERT")
			want := core.KindStatement
			if !tc.skip {
				want = core.KindTransaction
			}
			assert.Equal(t, want, retries[0].Kind)
			assert.Equal(t, "fresh", items[0].Note, "the default read back")
			requireStoredOnce(t, tdb, items)
		})
	}
}

// PostgreSQL runs an INSERT … RETURNING to its end before it sends the
// first row, so its deadlock (40P01) arrives before the first row, where
// the driver layer retries the statement alone, for a slice too; in
// GORM's implicit transaction the unit is retried. The holder has
// the name "held"; the INSERT of the row named "held" (code "c_held")
// enters its code in the code's unique index, then waits for the holder
// in the name's; the holder then inserts the code "c_held" and waits for
// the INSERT: a deadlock whose victim is the INSERT (it has waited
// longest; the holder's deadlock_timeout is longer).
func TestRealReturningDeadlockRetriedPostgres(t *testing.T) {
	d := conformance.DatabaseNamed(t, "postgres")
	for _, tc := range returningCases {
		t.Run(tc.name, func(t *testing.T) {
			log := &retryLog{}
			db, err := openGorm(d.Driver, d.DSN, gormcrl.WithRetryExec("{40P01:3,0:insert}"), config.WithObserver(log))
			require.NoError(t, err)
			table := conformance.Table("gormp_ret")
			tdb := func() *gorm.DB { return db.Table(table) }
			// The code's index first: PostgreSQL enters a row in a table's
			// unique indexes in the order they were created.
			for _, ddl := range []string{
				"CREATE TABLE " + table + " (id bigserial PRIMARY KEY, code varchar(32), name varchar(32), note varchar(32) DEFAULT 'fresh')",
				"CREATE UNIQUE INDEX " + table + "_code ON " + table + " (code)",
				"CREATE UNIQUE INDEX " + table + "_name ON " + table + " (name)",
			} {
				require.NoError(t, db.Exec(ddl).Error)
			}
			defer func() { _ = tdb().Migrator().DropTable(table) }()
			sqlDB, err := db.DB()
			require.NoError(t, err)

			released := holdThenWait(t, sqlDB, table,
				"INSERT INTO "+table+" (code, name) VALUES ('h', 'held')",
				"INSERT INTO "+table+" (code, name) VALUES ('c_held', 'other')")
			w := tdb()
			if tc.skip {
				w = w.Session(&gorm.Session{SkipDefaultTransaction: true})
			}
			items, err := createItems(w, tc.names)
			require.NoError(t, <-released)
			require.NoError(t, err)
			retries := log.all()
			require.NotEmpty(t, retries, "a retry was scheduled")
			assert.Contains(t, retries[0].Query, "INSERT INTO")
			assert.Equal(t, "40P01", retries[0].Token)
			assert.Equal(t, "fresh", items[0].Note, "the default read back")
			requireStoredOnce(t, tdb, items)
		})
	}
}

// holdThenWait runs first in a transaction of its own, then, once another
// session's INSERT INTO table waits for a lock, second (which waits for
// that session until the deadlock detector picks a victim), and rolls
// back; the channel receives the rollback's error, or the first error.
func holdThenWait(t *testing.T, db *sql.DB, table, first, second string) <-chan error {
	t.Helper()
	ctx := context.Background()
	holder, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = holder.ExecContext(ctx, "SET LOCAL deadlock_timeout = '10s'")
	require.NoError(t, err)
	_, err = holder.ExecContext(ctx, first)
	require.NoError(t, err, first)
	released := make(chan error, 1)
	go func() {
		if err := waitForLockWait(ctx, db, table); err != nil {
			_ = holder.Rollback()
			released <- err
			return
		}
		if _, err := holder.ExecContext(ctx, second); err != nil {
			_ = holder.Rollback()
			released <- err
			return
		}
		released <- holder.Rollback()
	}()
	return released
}

// waitForLockWait returns once a session's INSERT INTO table waits for a
// lock (PostgreSQL's pg_stat_activity), or an error after 10 s.
func waitForLockWait(ctx context.Context, db *sql.DB, table string) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		err := db.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1",
			"INSERT INTO \""+table+"\"%").Scan(&n)
		if err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("no INSERT INTO " + table + " waited for a lock within 10 s")
}

// An Update and a Delete alone (SkipDefaultTransaction) that wait for a
// row another session holds are retried by the driver layer: GORM builds
// the statement once, so the WHERE of the primary key that GORM adds while
// building is there once.
func TestRealUpdateDeleteAloneRetried(t *testing.T) {
	d := conformance.DatabaseNamed(t, "mariadb")
	log := &retryLog{}
	var buf bytes.Buffer
	db, err := gorm.Open(gormcrl.Open(dialectors[d.Driver](d.With("innodb_lock_wait_timeout=1")),
		gormcrl.WithRetryExec("{1205:3,0}"), config.WithObserver(log)),
		&gorm.Config{SkipDefaultTransaction: true, Logger: logger.New(logWriter{&buf}, logger.Config{LogLevel: logger.Info})})
	require.NoError(t, err)
	table := conformance.Table("gormp_upd")
	tdb := func() *gorm.DB { return db.Table(table) }
	require.NoError(t, tdb().Migrator().CreateTable(&gormpItem{}))
	defer func() { _ = tdb().Migrator().DropTable(table) }()
	item := gormpItem{Name: "held"}
	require.NoError(t, tdb().Create(&item).Error)
	sqlDB, err := db.DB()
	require.NoError(t, err)
	lock := "SELECT id FROM " + table + " WHERE id = " + strconv.FormatInt(item.ID, 10) + " FOR UPDATE"

	released := conformance.Hold(t, sqlDB, lock, 1900*time.Millisecond)
	buf.Reset()
	res := tdb().Model(&item).Update("note", "updated")
	require.NoError(t, <-released)
	require.NoError(t, res.Error)
	assert.Equal(t, int64(1), res.RowsAffected)
	require.Len(t, log.all(), 1, "retried once")
	last := lastStatement(t, buf.String())
	assert.Equal(t, 1, strings.Count(last, "`id` = "), "the WHERE of the key once: %s", last)
	var got gormpItem
	require.NoError(t, tdb().First(&got, item.ID).Error)
	assert.Equal(t, "updated", got.Note)

	released = conformance.Hold(t, sqlDB, lock, 1900*time.Millisecond)
	buf.Reset()
	res = tdb().Delete(&item)
	require.NoError(t, <-released)
	require.NoError(t, res.Error)
	assert.Equal(t, int64(1), res.RowsAffected)
	require.Len(t, log.all(), 2, "retried once more")
	last = lastStatement(t, buf.String())
	assert.Equal(t, 1, strings.Count(last, "`id` = "), "the WHERE of the key once: %s", last)
	var n int64
	require.NoError(t, tdb().Count(&n).Error)
	assert.Zero(t, n)
}

// lastStatement returns the statement of the last entry GORM's logger
// wrote (a file line, then the statement).
func lastStatement(t *testing.T, log string) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(log), "\n")
	require.NotEmpty(t, lines)
	return lines[len(lines)-1]
}
