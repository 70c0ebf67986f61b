package gormcrl_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/crl-go/crl/conformance"
	"github.com/crl-go/crl/gormcrl"
)

// A real InnoDB deadlock on an UPDATE inside a nested transaction (a
// savepoint): InnoDB rolls the whole transaction back, so GORM's ROLLBACK
// TO SAVEPOINT fails too (1305). The rule's filter names insert and update:
// it is checked against the UPDATE whose error ended the transaction, not
// the failed ROLLBACK TO SAVEPOINT, and the transaction is retried (issue
// 28, item 5). Through gormcrl.Open (the driver layer records the
// statements) and through db.Use over a plain pool (the plugin does).
func TestRealDeadlockInASavepointIsRetried(t *testing.T) {
	d := conformance.DatabaseNamed(t, "mariadb")
	admin, err := sql.Open("mysql", d.DSN)
	require.NoError(t, err)
	defer admin.Close()
	const rules = "{1213:3,0+0:insert,update}"
	ways := []struct {
		name string
		open func(t *testing.T) *gorm.DB
	}{
		{"gormcrl.Open", func(t *testing.T) *gorm.DB {
			db, err := openGorm("mysql", d.DSN, gormcrl.WithRetryExec(rules))
			require.NoError(t, err)
			return db
		}},
		{"db.Use", func(t *testing.T) *gorm.DB {
			db, err := gorm.Open(mysql.Open(d.DSN), &gorm.Config{Logger: logger.Discard})
			require.NoError(t, err)
			require.NoError(t, db.Use(gormcrl.New(gormcrl.WithRetryExec(rules))))
			return db
		}},
	}
	for _, way := range ways {
		t.Run(way.name, func(t *testing.T) {
			tb := conformance.Table("crl_savepoint")
			_, err := admin.Exec("CREATE TABLE " + tb + " (id INT PRIMARY KEY, v INT NOT NULL)")
			require.NoError(t, err)
			defer admin.Exec("DROP TABLE " + tb) //nolint:errcheck // best effort
			_, err = admin.Exec("INSERT INTO " + tb + " (id, v) VALUES (1, 0), (2, 0)")
			require.NoError(t, err)
			db := way.open(t)
			defer func() {
				if s, err := db.DB(); err == nil {
					_ = s.Close()
				}
			}()

			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			// The holder locks row 2 and is made the heavier transaction, so
			// that InnoDB picks GORM's as the victim.
			holder, err := admin.BeginTx(ctx, nil)
			require.NoError(t, err)
			_, err = holder.ExecContext(ctx, "UPDATE "+tb+" SET v = v + 100 WHERE id = 2")
			require.NoError(t, err)
			_, err = holder.ExecContext(ctx, "CREATE TEMPORARY TABLE "+tb+"_w (n INT)")
			require.NoError(t, err)
			_, err = holder.ExecContext(ctx, "INSERT INTO "+tb+"_w SELECT seq FROM seq_1_to_2000")
			require.NoError(t, err)

			runs := 0
			done := make(chan error, 1)
			go func() {
				done <- gormcrl.Transaction(db.WithContext(ctx), func(tx *gorm.DB) error {
					runs++
					if err := tx.Exec("UPDATE " + tb + " SET v = v + 1 WHERE id = 1").Error; err != nil {
						return err
					}
					return tx.Transaction(func(inner *gorm.DB) error {
						return inner.Exec("UPDATE " + tb + " SET v = v + 10 WHERE id = 2").Error
					})
				})
			}()
			time.Sleep(200 * time.Millisecond) // GORM's transaction holds row 1 and waits for row 2
			_, err = holder.ExecContext(ctx, "UPDATE "+tb+" SET v = v + 100 WHERE id = 1")
			require.NoError(t, err, "the holder is not the victim")
			require.NoError(t, holder.Commit())
			require.NoError(t, <-done, "the transaction was retried")
			assert.Equal(t, 1, runs, "replayed by the driver layer, its savepoint included: the closure ran once")
			for id, want := range map[int]int64{1: 101, 2: 110} {
				var v int64
				require.NoError(t, admin.QueryRow(fmt.Sprintf("SELECT v FROM %s WHERE id = %d", tb, id)).Scan(&v))
				assert.Equal(t, want, v, "row %d", id)
			}
		})
	}
}
