// Package closures gives closures to crl's retry helpers: each line
// marked want makes its closure unsafe to run again; the others do not.
package closures

import (
	"context"
	"database/sql"

	"example.com/shop/ent"
	"github.com/jmoiron/sqlx"
	"github.com/uptrace/bun"
	"gorm.io/gorm"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/gormcrl"
	"github.com/crl-go/crl/sqlxcrl"
)

type item struct {
	ID   int64
	Name string
}

// insertAll is the sqlx service of the issue: after one retry it
// returned 3 results for 2 inputs.
func insertAll(ctx context.Context, db *sqlxcrl.DB, names []string) ([]item, error) {
	var results []item
	err := db.RunInTx(ctx, nil, func(tx *sqlxcrl.Tx) error {
		for _, name := range names {
			var it item
			if err := tx.SelectContext(ctx, &it, "INSERT INTO items (name) OUTPUT inserted.id, inserted.name VALUES (?)", name); err != nil {
				return err
			}
			results = append(results, it) // want `the closure given to RunInTx appends to results, declared outside it: a retry runs the closure again and keeps what the failed attempt did to it; reset results at the top of the closure, or build the result in a local and assign it after success`
		}
		return nil
	})
	return results, err
}

// insertAllFixed resets at the top.
func insertAllFixed(ctx context.Context, db *sqlxcrl.DB, names []string) ([]item, error) {
	var results []item
	err := db.RunInTx(ctx, nil, func(tx *sqlxcrl.Tx) error {
		results = results[:0]
		for _, name := range names {
			var it item
			if err := tx.SelectContext(ctx, &it, "INSERT …", name); err != nil {
				return err
			}
			results = append(results, it)
		}
		return nil
	})
	return results, err
}

// insertAllLocal builds the result in a local and assigns it after success.
func insertAllLocal(ctx context.Context, db *sql.DB, names []string) ([]int64, error) {
	var ids []int64
	err := crl.RunInTx(ctx, db, nil, func(tx *sql.Tx) error {
		var got []int64
		for range names {
			var id int64
			if err := tx.QueryRowContext(ctx, "INSERT …").Scan(&id); err != nil {
				return err
			}
			got = append(got, id)
		}
		ids = got
		return nil
	})
	return ids, err
}

type counter struct {
	n     int
	items []int64
	seen  map[int64]bool
}

var attempts int

func sqlWrites(ctx context.Context, db *sql.DB, c *counter, seen map[string]bool, out []int64, total int, p *item) error {
	return crl.RunInTx(ctx, db, nil, func(tx *sql.Tx) error {
		total += 2                   // want `updates total from its old value \(\+=\)`
		attempts++                   // want `the closure given to crl.RunInTx updates attempts from its old value \(\+\+\)`
		c.n++                        // want `updates c.n from its old value \(\+\+\)`
		c.items = append(c.items, 1) // want `appends to c.items`
		c.seen[1] = true             // want `writes an element of c.seen`
		seen["a"] = true             // want `writes an element of seen`
		delete(seen, "b")            // want `deletes from seen`
		out[0] = 1                   // want `writes an element of out`
		copy(out, []int64{1})        // want `copies into out`
		total = total * 2            // want `updates total from its old value`
		p.Name = "x"                 // a field overwritten whole: the last attempt's value stays
		*p = item{ID: 1}             // overwritten whole
		local := map[string]bool{}   // inside
		local["a"] = true            // inside
		func() { c.n += 1 }()        // want `updates c.n from its old value \(\+=\)`
		defer tx.Rollback()          // want `tx.Rollback in the closure given to crl.RunInTx: the helper commits the transaction when the closure returns nil and rolls it back when it returns an error, and re-runs it on a fresh one; a transaction the closure ended itself fails the helper's own ROLLBACK`
		return tx.Commit()           // want `tx.Commit in the closure given to crl.RunInTx`
	})
}

func resets(ctx context.Context, db *sql.DB, c *counter, seen map[string]bool, out []int64, total int) error {
	return crl.RunInTx(ctx, db, nil, func(tx *sql.Tx) error {
		total = 0
		c.items = nil
		clear(seen)
		c.seen = map[int64]bool{}
		out = make([]int64, 2)
		total += 2
		c.items = append(c.items, 1)
		c.seen[1] = true
		seen["a"] = true
		out[0] = 1
		if total > 1 {
			c.n = 0
		}
		c.n++ // want `updates c.n from its old value`
		return nil
	})
}

func resetTooLate(ctx context.Context, db *sql.DB, out []int64) error {
	return crl.RunInTx(ctx, db, nil, func(tx *sql.Tx) error {
		out = append(out, 1) // want `appends to out`
		out = nil
		return nil
	})
}

func sqlxWrites(ctx context.Context, db *sqlxcrl.DB, plain *sqlx.DB, n int) error {
	if err := db.RunInTx(ctx, nil, func(tx *sqlxcrl.Tx) error {
		n++                   // want `the closure given to RunInTx updates n`
		return tx.Tx.Commit() // want `tx.Tx.Commit in the closure given to RunInTx`
	}); err != nil {
		return err
	}
	return sqlxcrl.RunInTxx(ctx, plain, nil, func(tx *sqlx.Tx) error {
		n++                  // want `the closure given to sqlxcrl.RunInTxx updates n`
		return tx.Rollback() // want `tx.Rollback in the closure given to sqlxcrl.RunInTxx`
	})
}

// adapter is the shape of casbin's GORM adapter moved to
// gormcrl.Transaction: its in-memory model is updated inside the
// transaction, so a retry left two policies in memory and one row.
type adapter struct {
	db       *gorm.DB
	policies []string
	model    map[string]bool
}

func (a *adapter) AddPolicies(rules []string) error {
	return gormcrl.Transaction(a.db, func(tx *gorm.DB) error {
		for _, r := range rules {
			if err := tx.Create(&r).Error; err != nil {
				return err
			}
			a.policies = append(a.policies, r) // want `the closure given to gormcrl.Transaction appends to a.policies`
			a.model[r] = true                  // want `writes an element of a.model`
		}
		return nil
	})
}

// AddPoliciesFixed updates the model after the transaction committed.
func (a *adapter) AddPoliciesFixed(rules []string) error {
	err := gormcrl.Transaction(a.db, func(tx *gorm.DB) error {
		for _, r := range rules {
			if err := tx.Create(&r).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	a.policies = append(a.policies, rules...)
	return nil
}

func gormCommits(ctx context.Context, db *gorm.DB) error {
	return gormcrl.Transaction(db, func(tx *gorm.DB) error {
		tx.SavePoint("sp")
		tx.RollbackTo("sp")
		if err := tx.Create(&item{}).Error; err != nil {
			return tx.WithContext(ctx).Rollback().Error // want `tx.WithContext\(ctx\).Rollback in the closure given to gormcrl.Transaction`
		}
		return tx.Commit().Error // want `tx.Commit in the closure given to gormcrl.Transaction`
	})
}

// entUnit: crl.Retry gives no transaction, so ent's own Commit is the way.
func entUnit(ctx context.Context, client *ent.Client, ids []int) error {
	return crl.Retry(ctx, func(ctx context.Context) error {
		tx, err := client.Tx(ctx)
		if err != nil {
			return err
		}
		id, err := tx.User.Add(ctx, "a")
		if err != nil {
			_ = tx.Rollback()
			return err
		}
		ids = append(ids, id) // want `the closure given to crl.Retry appends to ids`
		return tx.Commit()
	})
}

func bunUnit(ctx context.Context, db *bun.DB, names []string) error {
	return crl.Retry(ctx, func(ctx context.Context) error {
		return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			names = append(names, "x") // want `the closure given to crl.Retry appends to names`
			return nil
		})
	})
}

func coreUnit(ctx context.Context, r *core.Retrier, n int) error {
	if err := r.DoTx(ctx, func(ctx context.Context) (string, error) {
		n++ // want `the closure given to DoTx updates n`
		return "", nil
	}); err != nil {
		return err
	}
	return r.Run(ctx, &core.Op{}, func(ctx context.Context) error {
		n-- // want `the closure given to Run updates n`
		return nil
	})
}

// recorder's save is given by name (a method value): followed as a
// literal is; its receiver is bound outside the closure.
type recorder struct{ saved []int64 }

func (r *recorder) save(tx *sql.Tx) error {
	var id int64
	if err := tx.QueryRow("INSERT …").Scan(&id); err != nil {
		return err
	}
	r.saved = append(r.saved, id) // want `the closure given to crl.RunInTx appends to r.saved`
	return tx.Commit()            // want `tx.Commit in the closure given to crl.RunInTx`
}

func count(ctx context.Context) error {
	attempts++ // want `the closure given to crl.Retry updates attempts`
	return nil
}

func named(ctx context.Context, db *sql.DB, r *recorder) error {
	if err := crl.RunInTx(ctx, db, nil, r.save); err != nil {
		return err
	}
	return crl.Retry(ctx, count)
}

// model is updated through its own methods, in this package: a call in
// the closure that writes what its receiver or an argument reaches is a
// write of the closure.
type model struct {
	rules []string
	index map[string]int
}

func (m *model) add(r string) {
	m.rules = append(m.rules, r)
	m.index[r] = len(m.rules)
}

func (m *model) has(r string) bool { _, ok := m.index[r]; return ok }

func (m *model) reset() { m.rules, m.index = nil, map[string]int{} }

func addAll(m *model, rs []string) {
	for _, r := range rs {
		m.add(r)
	}
}

func record(ids *[]int64, id int64) { *ids = append(*ids, id) }

func bump(c *counter) { c.n++ }

func bumpCopy(c counter) { c.n++ }

func rebind(m *model) { m = &model{}; m.rules = append(m.rules, "x") }

func callees(db *gorm.DB, m *model, c *counter, ids []int64) error {
	return gormcrl.Transaction(db, func(tx *gorm.DB) error {
		local := &model{index: map[string]int{}}
		local.add("x")
		_ = m.has("x")
		m.add("y")               // want `the closure given to gormcrl.Transaction calls m.add, which appends to m.rules \(m, declared outside the closure\)`
		addAll(m, []string{"z"}) // want `calls addAll, which calls add, which appends to m.rules`
		record(&ids, 1)          // want `calls record, which appends to \*ids \(&ids, declared outside the closure\)`
		bump(c)                  // want `calls bump, which updates c.n from its old value \(\+\+\)`
		bumpCopy(*c)
		rebind(m)
		return nil
	})
}

func calleesReset(db *gorm.DB, m *model) error {
	return gormcrl.Transaction(db, func(tx *gorm.DB) error {
		m.reset()
		return nil
	})
}
