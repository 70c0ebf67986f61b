package gormcrl_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/gormcrl"
)

type account struct {
	ID      int64
	Balance int64
}

type ledgerRow struct {
	ID     int64
	Src    int64
	Dst    int64
	Amount int64
}

// TestRealDeadlocksGORM runs concurrent transfers through
// gormcrl.Transaction on real MariaDB and PostgreSQL, locking accounts in
// random order so that the servers pick deadlock victims. No money is
// created or lost, and every successful transfer has exactly one ledger row.
func TestRealDeadlocksGORM(t *testing.T) {
	for _, tc := range []struct {
		name, env, rules string
		dialector        func(string) gorm.Dialector
	}{
		{"mariadb", "CRL_MYSQL_DSN", "{1213,1205:30,5ms*1.5}", mysql.Open},
		{"postgres", "CRL_POSTGRES_DSN", "{40P01,40001:30,5ms*1.5}", postgres.Open},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := os.Getenv(tc.env)
			if dsn == "" {
				t.Skipf("%s is not set", tc.env)
			}
			if tc.name == "postgres" {
				dsn += "&deadlock_timeout=50ms"
			}
			db, err := gorm.Open(gormcrl.Open(tc.dialector(dsn), gormcrl.WithRetryExec(tc.rules),
				config.WithRetryBudget(core.BudgetSettings{Max: 10000})), &gorm.Config{Logger: logger.Discard})
			require.NoError(t, err)
			suffix := fmt.Sprintf("%d", time.Now().UnixNano()%1e9)
			ledger := "crl_gledger_" + suffix
			require.NoError(t, db.Table("crl_gacc_"+suffix).Migrator().CreateTable(&account{}))
			require.NoError(t, db.Table(ledger).Migrator().CreateTable(&ledgerRow{}))
			defer db.Migrator().DropTable("crl_gacc_"+suffix, ledger)
			const n, initial = 4, 1000
			for i := 1; i <= n; i++ {
				require.NoError(t, db.Table("crl_gacc_"+suffix).Create(&account{ID: int64(i), Balance: initial}).Error)
			}
			var ok atomic.Int64
			var wg sync.WaitGroup
			for w := 0; w < 8; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 20; i++ {
						src := int64(rand.IntN(n) + 1)
						dst := src%n + 1
						err := gormcrl.Transaction(db, func(tx *gorm.DB) error {
							if err := tx.Table("crl_gacc_"+suffix).Where("id = ?", src).
								Update("balance", gorm.Expr("balance - ?", 1)).Error; err != nil {
								return err
							}
							time.Sleep(time.Millisecond)
							if err := tx.Table("crl_gacc_"+suffix).Where("id = ?", dst).
								Update("balance", gorm.Expr("balance + ?", 1)).Error; err != nil {
								return err
							}
							return tx.Table(ledger).Create(&ledgerRow{Src: src, Dst: dst, Amount: 1}).Error
						})
						if err != nil {
							assert.ErrorIs(t, err, core.ErrRetriesExhausted, "a transfer that fails has used up its retries")
							continue
						}
						ok.Add(1)
					}
				}()
			}
			wg.Wait()
			var total, rows int64
			require.NoError(t, db.Table("crl_gacc_"+suffix).Select("SUM(balance)").Scan(&total).Error)
			require.NoError(t, db.Table(ledger).Count(&rows).Error)
			assert.Equal(t, int64(n*initial), total, "money created or lost")
			assert.Equal(t, ok.Load(), rows, "one ledger row per successful transfer")
			t.Logf("%s: %d transfers committed", tc.name, ok.Load())
		})
	}
}
