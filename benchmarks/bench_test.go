package benchmarks

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	retrygo "github.com/avast/retry-go/v4"
	backoff "github.com/cenkalti/backoff/v4"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/jmoiron/sqlx"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	crlpkg "github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/gormcrl"
	"github.com/crl-go/crl/sqlxcrl"
)

type deadlock struct{}

func (deadlock) Error() string         { return "deadlock victim" }
func (deadlock) SQLErrorNumber() int32 { return 1205 }

var errDeadlock error = deadlock{}

var sink error

// rules is the policy of every benchmark: 3 retries of a deadlock or lock
// time-out, for SELECT and UPDATE.
const rules = "{1205,1222:3,2*2:select,update}"

func isDeadlock(err error) bool {
	var n interface{ SQLErrorNumber() int32 }
	return errors.As(err, &n) && n.SQLErrorNumber() == 1205
}

// BenchmarkSuccessPath is one statement that succeeds at once, called
// directly and through each retry library with an equivalent policy (3
// retries of a deadlock). The difference to "direct" is what a retry layer
// costs when nothing fails. crl must allocate nothing.
func BenchmarkSuccessPath(b *testing.B) {
	ctx := context.Background()
	n := 0
	stmt := func() error { n++; return nil }
	stmtCtx := func(context.Context) error { n++; return nil }
	parsed, err := core.ParseStatementRules(rules)
	if err != nil {
		b.Fatal(err)
	}
	r, err := core.NewRetrier(core.Policy{Statement: parsed}, core.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(100, func() { sink = r.Do(ctx, "update t", stmtCtx) }); allocs != 0 {
		b.Fatalf("crl's success path allocates %v times", allocs)
	}
	fs := failsafe.With[any](retrypolicy.NewBuilder[any]().
		HandleIf(func(_ any, err error) bool { return isDeadlock(err) }).
		WithMaxRetries(3).WithBackoff(2*time.Second, 8*time.Second).Build())

	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = stmt()
		}
	})
	b.Run("crl", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = r.Do(ctx, "update t", stmtCtx)
		}
	})
	b.Run("failsafe", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = fs.Run(stmt)
		}
	})
	b.Run("retrygo", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = retrygo.Do(stmt, retrygo.Attempts(4), retrygo.Context(ctx), retrygo.RetryIf(isDeadlock))
		}
	})
	b.Run("backoff", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			policy := backoff.WithMaxRetries(backoff.NewExponentialBackOff(), 3)
			sink = backoff.Retry(func() error {
				if err := stmt(); err != nil && !isDeadlock(err) {
					return backoff.Permanent(err)
				}
				return nil
			}, backoff.WithContext(policy, ctx))
		}
	})
}

// BenchmarkDecide is the retry decision on an error, the pure function
// the statement loop asks after a failed attempt (core.Policy.Decide): it
// classifies the error, looks up its rule, checks the query filter and
// the batch rule, and computes the wait. The loop's execution around it
// (budget, event, wait) is not part of it. It must allocate nothing.
func BenchmarkDecide(b *testing.B) {
	parsed, err := core.ParseStatementRules(rules + ";{40501:5,10+5}")
	if err != nil {
		b.Fatal(err)
	}
	p := core.Policy{Statement: parsed}
	decide := func() {
		if wait, giveUp := p.Decide("/* hint */ UPDATE t SET x = 1", 1, errDeadlock); giveUp != nil || wait != 2*time.Second {
			b.Fatalf("decision %v after %v, want a retry after 2s", giveUp, wait)
		}
	}
	allocs := testing.AllocsPerRun(100, decide)
	b.ReportAllocs()
	for b.Loop() {
		decide()
	}
	if allocs != 0 {
		b.Fatalf("the decision allocates %v times", allocs)
	}
}

// BenchmarkParse parses a retryExec value of three rules.
func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := core.ParseStatementRules("{1205,1222:3,2*2:select,update};{40501:5,10+5};{40613:3,1s*2}"); err != nil {
			b.Fatal(err)
		}
	}
}

// memDB opens a handle on the in-memory driver.
func memDB(tb testing.TB) *sql.DB {
	tb.Helper()
	db, err := sql.Open("crlmem", "")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// sqlxPair returns plain sqlx and sqlxcrl on the in-memory driver, the
// latter's pool opened through crl's driver layer.
func sqlxPair(tb testing.TB) (*sqlx.DB, *sqlxcrl.DB) {
	tb.Helper()
	crl, err := sqlxcrl.Open("crlmem", "", sqlxcrl.WithRetryExec(rules), config.WithDriverFamily("mysql"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { crl.Close() })
	return sqlx.NewDb(memDB(tb), "mysql"), crl
}

// BenchmarkSqlxExec compares ExecContext through sqlxcrl with plain sqlx on
// the in-memory driver, where nothing but database/sql, the driver layer
// and the wrapper costs anything. The rows: plain is sqlx over
// database/sql's pool of the driver; layer is sqlx over the pool crl
// opened (the driver layer, with the rules), without sqlxcrl; crl is
// sqlxcrl over that pool. crl over plain is what the whole of crl costs;
// crl over layer is sqlxcrl's own share.
func BenchmarkSqlxExec(b *testing.B) {
	ctx := context.Background()
	plain, crl := sqlxPair(b)
	layer := sqlx.NewDb(crl.DB.DB, "mysql")
	wrapper := sqlx.NewDb(sql.OpenDB(passConnector{memConnector{}}), "mysql")
	b.Cleanup(func() { wrapper.Close() })
	const q = "UPDATE accounts SET balance = balance + 1 WHERE id = 1"
	for _, bc := range []struct {
		name string
		exec func() error
	}{
		{"plain", func() error { _, err := plain.ExecContext(ctx, q); return err }},
		{"layer", func() error { _, err := layer.ExecContext(ctx, q); return err }},
		{"crl", func() error { _, err := crl.ExecContext(ctx, q); return err }},
		{"wrapper", func() error { _, err := wrapper.ExecContext(ctx, q); return err }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.exec(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Order is the model of BenchmarkGormFirst.
type Order struct {
	ID   int64
	Name string
}

// gormDB opens GORM (MySQL dialect) on the in-memory driver, with the crl
// plugin when asked.
func gormDB(tb testing.TB, plugin bool) *gorm.DB {
	tb.Helper()
	if !plugin {
		return gormOver(tb, memDB(tb), false)
	}
	return gormOver(tb, crlMemDB(tb), true)
}

// crlMemDB is the in-memory driver's pool opened by crl, under the driver
// layer with the rules: the pool the GORM plugin's settings apply to.
func crlMemDB(tb testing.TB) *sql.DB {
	tb.Helper()
	db, err := crlpkg.Open("crlmem", "", crlpkg.WithRetryExec(rules), config.WithDriverFamily("mysql"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// gormOver opens GORM (MySQL dialect) over conn, with the crl plugin when
// plugin is set.
func gormOver(tb testing.TB, conn *sql.DB, plugin bool) *gorm.DB {
	tb.Helper()
	db, err := gorm.Open(gormmysql.New(gormmysql.Config{Conn: conn, SkipInitializeWithVersion: true}),
		&gorm.Config{Logger: logger.Discard})
	if err != nil {
		tb.Fatal(err)
	}
	if plugin {
		if err := db.Use(gormcrl.New()); err != nil {
			tb.Fatal(err)
		}
	}
	return db
}

// BenchmarkGormFirst compares First through GORM with the crl plugin with
// plain GORM (MySQL dialect) on the in-memory driver. The rows: plain is
// GORM over database/sql's pool of the driver; layer is GORM without the
// plugin over the pool crl opened (the driver layer, with the rules);
// crl is GORM with the plugin over such a pool. crl over plain is what
// the whole of crl costs; crl over layer is the plugin's own share.
func BenchmarkGormFirst(b *testing.B) {
	for _, bc := range []struct {
		name string
		db   *gorm.DB
	}{{"plain", gormDB(b, false)}, {"layer", gormOver(b, crlMemDB(b), false)}, {"crl", gormDB(b, true)}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var o Order
				if err := bc.db.First(&o, 7).Error; err != nil || o.ID != 7 {
					b.Fatal(err, o)
				}
			}
		})
	}
}
