package sqlxcrl_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/sqlxcrl"
)

// retryCounter counts the retries of whole transactions.
type retryCounter struct {
	core.NopObserver
	retries atomic.Int64
}

func (c *retryCounter) RetryScheduled(core.RetryScheduled) { c.retries.Add(1) }

// TestRealDeadlocksLoseAndDuplicateNothing runs concurrent transfers that
// lock accounts in random order, so the server picks deadlock victims, on
// real MariaDB and PostgreSQL. RunInTx retries the victims as whole
// transactions; at the end no money is created or lost and every
// successful transfer has exactly one ledger row.
func TestRealDeadlocksLoseAndDuplicateNothing(t *testing.T) {
	for _, tc := range []struct {
		name, env, driver, rules string
		placeholder              func(int) string
	}{
		{"mariadb", "CRL_MYSQL_DSN", "mysql", "{1213,1205:30,5ms*1.5}", func(int) string { return "?" }},
		{"postgres", "CRL_POSTGRES_DSN", "pgx", "{40P01,40001:30,5ms*1.5}", func(i int) string { return fmt.Sprintf("$%d", i) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := os.Getenv(tc.env)
			if dsn == "" {
				t.Skipf("%s is not set", tc.env)
			}
			if tc.driver == "pgx" {
				// Detect deadlocks in 50 ms, not PostgreSQL's default 1 s
				// (a runtime parameter that pgx sends at startup).
				dsn += sep(dsn) + "deadlock_timeout=50ms"
			}
			counter := &retryCounter{}
			db, err := sqlxcrl.Connect(tc.driver, dsn, sqlxcrl.WithRetryExec(tc.rules), config.WithObserver(counter),
				config.WithRetryBudget(core.BudgetSettings{Max: 10000}))
			require.NoError(t, err)
			defer db.Close()
			suffix := fmt.Sprintf("%d", time.Now().UnixNano()%1e9)
			accounts, ledger := "crl_acc_"+suffix, "crl_ledger_"+suffix
			db.MustExec("CREATE TABLE " + accounts + " (id INT PRIMARY KEY, balance BIGINT NOT NULL)")
			db.MustExec("CREATE TABLE " + ledger + " (src INT NOT NULL, dst INT NOT NULL, amount BIGINT NOT NULL)")
			defer db.Exec("DROP TABLE " + accounts)
			defer db.Exec("DROP TABLE " + ledger)
			const n, initial = 4, 1000
			for i := 1; i <= n; i++ {
				db.MustExec(fmt.Sprintf("INSERT INTO %s (id, balance) VALUES (%d, %d)", accounts, i, initial))
			}
			p := tc.placeholder
			debit := fmt.Sprintf("UPDATE %s SET balance = balance - %s WHERE id = %s", accounts, p(1), p(2))
			credit := fmt.Sprintf("UPDATE %s SET balance = balance + %s WHERE id = %s", accounts, p(1), p(2))
			record := fmt.Sprintf("INSERT INTO %s (src, dst, amount) VALUES (%s, %s, %s)", ledger, p(1), p(2), p(3))

			var ok, failed atomic.Int64
			var wg sync.WaitGroup
			for w := 0; w < 8; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 25; i++ {
						src := rand.IntN(n) + 1
						dst := src%n + 1
						err := db.RunInTx(context.Background(), nil, func(tx *sqlxcrl.Tx) error {
							if _, err := tx.Exec(debit, 1, src); err != nil {
								return err
							}
							time.Sleep(time.Millisecond) // widen the window for lock-order deadlocks
							if _, err := tx.Exec(credit, 1, dst); err != nil {
								return err
							}
							_, err := tx.Exec(record, src, dst, 1)
							return err
						})
						if err != nil {
							failed.Add(1)
							assert.ErrorIs(t, err, core.ErrRetriesExhausted, "a transfer that fails has used up its retries")
							continue
						}
						ok.Add(1)
					}
				}()
			}
			wg.Wait()
			var total, rows int64
			require.NoError(t, db.Get(&total, "SELECT SUM(balance) FROM "+accounts))
			require.NoError(t, db.Get(&rows, "SELECT COUNT(*) FROM "+ledger))
			assert.Equal(t, int64(n*initial), total, "money created or lost")
			assert.Equal(t, ok.Load(), rows, "one ledger row per successful transfer")
			for id := 1; id <= n; id++ {
				var balance, in, out int64
				require.NoError(t, db.Get(&balance, fmt.Sprintf("SELECT balance FROM %s WHERE id = %d", accounts, id)))
				require.NoError(t, db.Get(&in, fmt.Sprintf("SELECT COALESCE(SUM(amount), 0) FROM %s WHERE dst = %d", ledger, id)))
				require.NoError(t, db.Get(&out, fmt.Sprintf("SELECT COALESCE(SUM(amount), 0) FROM %s WHERE src = %d", ledger, id)))
				assert.Equal(t, initial+in-out, balance, "account %d: the balance the ledger says", id)
			}
			t.Logf("%s: %d transfers committed, %d gave up, %d whole-transaction retries", tc.name, ok.Load(), failed.Load(), counter.retries.Load())
		})
	}
}

func sep(dsn string) string {
	for i := 0; i < len(dsn); i++ {
		if dsn[i] == '?' {
			return "&"
		}
	}
	return "?"
}
