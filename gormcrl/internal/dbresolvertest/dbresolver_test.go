package dbresolvertest

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/plugin/dbresolver"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/gormcrl"
)

// retryLog counts the retries one handle's loops scheduled.
type retryLog struct {
	core.NopObserver
	mu      sync.Mutex
	queries []string
}

func (l *retryLog) RetryScheduled(e core.RetryScheduled) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.queries = append(l.queries, e.Query)
}

func (l *retryLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queries)
}

type gormpItem struct {
	ID   int64 `gorm:"primaryKey"`
	Name string
}

// ownDatabase creates a database of its own on the server of dsn, with the
// table of the test holding one row named after it, and drops it when the
// test ends; it returns the DSN of that database.
func ownDatabase(t *testing.T, admin *sql.DB, dsn *mysql.Config, name, table string) string {
	t.Helper()
	_, err := admin.Exec("CREATE DATABASE " + name)
	require.NoError(t, err)
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP DATABASE IF EXISTS " + name); err != nil {
			t.Errorf("drop the database %s: %v", name, err)
		}
	})
	c := dsn.Clone()
	c.DBName = name
	_, err = admin.Exec(fmt.Sprintf("CREATE TABLE %s.%s (id BIGINT PRIMARY KEY, name VARCHAR(32))", name, table))
	require.NoError(t, err)
	_, err = admin.Exec(fmt.Sprintf("INSERT INTO %s.%s VALUES (1, ?)", name, table), name)
	require.NoError(t, err)
	return c.FormatDSN()
}

// lockRow holds row 1 of db.table for update, in a transaction of its own,
// and lets go after d.
func lockRow(t *testing.T, admin *sql.DB, table string, d time.Duration) <-chan error {
	t.Helper()
	ctx := context.Background()
	tx, err := admin.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, "SELECT id FROM "+table+" WHERE id = 1 FOR UPDATE")
	require.NoError(t, err)
	done := make(chan error, 1)
	time.AfterFunc(d, func() { done <- tx.Rollback() })
	return done
}

// Sources and replicas that dbresolver opens from dialectors of
// gormcrl.Open get their own retries: a read that dbresolver sends to a
// replica is retried by that replica's rules (and observed by its
// observer), a write it sends to a source by the source's, not by the
// main handle's. Real MariaDB, with two databases as the
// replicas: each read locks in share mode a row that another session
// holds, waits past innodb_lock_wait_timeout (1205), and succeeds on the
// retry after the holder let go.
func TestSourcesAndReplicasOpenedWithGormcrlHaveTheirOwnRetries(t *testing.T) {
	dsn := os.Getenv("CRL_MYSQL_DSN")
	if dsn == "" {
		t.Skip("CRL_MYSQL_DSN is not set")
	}
	parsed, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	admin, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close() }) // after the databases' drops (cleanups run last first)

	suffix := fmt.Sprintf("%d_%d", time.Now().UnixNano()%1e9, rand.IntN(1000))
	table := "gormp_resolver"
	nameA, nameB, nameS := "crl_replica_a_"+suffix, "crl_replica_b_"+suffix, "crl_source_"+suffix
	a := ownDatabase(t, admin, parsed, nameA, table)
	b := ownDatabase(t, admin, parsed, nameB, table)
	s := ownDatabase(t, admin, parsed, nameS, table)

	main, replicaA, replicaB, source := &retryLog{}, &retryLog{}, &retryLog{}, &retryLog{}
	withTimeout := func(d string) string { return d + "&innodb_lock_wait_timeout=1" }
	db, err := gorm.Open(gormcrl.Open(gormmysql.Open(withTimeout(dsn)),
		gormcrl.WithRetryExec("{1205:1,0}"), config.WithObserver(main)),
		&gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	require.NoError(t, db.Use(dbresolver.Register(dbresolver.Config{
		Sources: []gorm.Dialector{
			gormcrl.Open(gormmysql.Open(withTimeout(s)), gormcrl.WithRetryExec("{1205:2,0}"), config.WithObserver(source)),
		},
		Replicas: []gorm.Dialector{
			gormcrl.Open(gormmysql.Open(withTimeout(a)), gormcrl.WithRetryExec("{1205:2,0}"), config.WithObserver(replicaA)),
			gormcrl.Open(gormmysql.Open(withTimeout(b)), gormcrl.WithRetryExec("{1205:2,0}"), config.WithObserver(replicaB)),
		},
		Policy: dbresolver.RoundRobinPolicy(),
	})))
	p, ok := db.Plugins[gormcrl.PluginName].(*gormcrl.Plugin)
	require.True(t, ok)
	require.NotNil(t, p.Retrier(), "the source's plugin stays in effect")

	names := map[string]bool{}
	for range 2 { // round robin: one read per replica
		heldA := lockRow(t, admin, nameA+"."+table, 1900*time.Millisecond)
		heldB := lockRow(t, admin, nameB+"."+table, 1900*time.Millisecond)
		var items []gormpItem
		err := db.Raw("SELECT id, name FROM " + table + " WHERE id = 1 LOCK IN SHARE MODE").Find(&items).Error
		require.NoError(t, <-heldA)
		require.NoError(t, <-heldB)
		require.NoError(t, err)
		require.Len(t, items, 1, "the retry's rows only")
		names[items[0].Name] = true
	}
	assert.Equal(t, map[string]bool{nameA: true, nameB: true}, names, "a read on each replica")
	assert.Equal(t, 1, replicaA.count(), "replica A's rules retried its read")
	assert.Equal(t, 1, replicaB.count(), "replica B's rules retried its read")
	assert.Equal(t, 0, main.count(), "the main handle's rules retried nothing")

	// A write goes to the source: its rules retry its unit, whose INSERT
	// waited for a key another session holds there.
	held := holdKey(t, admin, nameS+"."+table, 2, 1900*time.Millisecond)
	err = db.Table(table).Create(&gormpItem{ID: 2, Name: "mine"}).Error
	require.NoError(t, <-held)
	require.NoError(t, err)
	assert.Equal(t, 1, source.count(), "the source's rules retried the write")
	assert.Equal(t, 0, main.count(), "the main handle's rules retried nothing")
	var n int
	require.NoError(t, admin.QueryRow("SELECT COUNT(*) FROM "+nameS+"."+table+" WHERE name = 'mine'").Scan(&n))
	assert.Equal(t, 1, n, "the row is in the source's database, once")
}

// holdKey inserts the key id into db.table in a transaction of its own and
// rolls it back after d.
func holdKey(t *testing.T, admin *sql.DB, table string, id int, d time.Duration) <-chan error {
	t.Helper()
	ctx := context.Background()
	tx, err := admin.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s VALUES (%d, 'holder')", table, id))
	require.NoError(t, err)
	done := make(chan error, 1)
	time.AfterFunc(d, func() { done <- tx.Rollback() })
	return done
}
