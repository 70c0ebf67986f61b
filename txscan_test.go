package crl

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/crl-go/crl/internal/tables/family"
)

// Which texts may begin a transaction, per family: the test every
// statement outside one takes.
func TestTxDialectMayBegin(t *testing.T) {
	for fam, cases := range map[family.Family]map[string]bool{
		family.Postgres: {
			"BEGIN": true, "begin work": true, "BEGIN ISOLATION LEVEL SERIALIZABLE": true,
			"START TRANSACTION READ ONLY": true, "  /* c */ (begin)": true, "\uFEFFBegin": true,
			"SELECT 1; BEGIN": true, "UPDATE t SET a = 1;\nbegin;": true,
			"SELECT 1": false, "UPDATE t SET a = 1": false, "SET search_path = x": false,
			"SET autocommit = 0": false, "START": false, "begins": false, "": false, "   ": false,
			"SELECT 'x;BEGIN'": false, "SELECT $$;BEGIN$$": false, "-- BEGIN\nSELECT 1": false,
			"COMMIT": false, "END": false, "SELECT 1;": false,
		},
		family.MySQL: {
			"START TRANSACTION": true, "start transaction with consistent snapshot": true,
			"BEGIN": true, "BEGIN WORK": true, "XA START 'x'": true, "xa begin 'x'": true,
			"SET autocommit=0": true, "SET autocommit = OFF": true, "set @@session.autocommit = 0": true,
			"SET SESSION autocommit=false": true, "SET LOCAL autocommit = 0": true, "SET @@autocommit := 0": true,
			"SET names utf8mb4, autocommit = 0": true, "SET autocommit = @x": true,
			"SET autocommit = DEFAULT": true, "SET autocommit = 1 - 1": true,
			"SET autocommit=1": false, "SET autocommit = ON": false, "SET AUTOCOMMIT = true": false,
			"SET GLOBAL autocommit = 0": false, "SET @@global.autocommit = 0": false, "SET PERSIST autocommit = 0": false,
			"SET @autocommit = 0": false, "SET sql_mode = 'x', autocommit = 1": false,
			"SET TRANSACTION ISOLATION LEVEL READ COMMITTED": false, "SET NAMES utf8mb4": false,
			"XA END 'x'": false, "UPDATE t SET autocommit = 0": false,
			"SELECT 1; START TRANSACTION": true, `SELECT 'a\';START TRANSACTION'`: false,
		},
		family.SQLServer: {
			"BEGIN TRAN": true, "BEGIN TRANSACTION t1": true, "begin distributed transaction": true,
			"SET IMPLICIT_TRANSACTIONS ON": true, "SET ANSI_DEFAULTS ON": true,
			"SET ANSI_NULLS, IMPLICIT_TRANSACTIONS ON": true, "SET NOCOUNT ON BEGIN TRAN UPDATE t SET a = 1": true,
			"IF @@TRANCOUNT = 0 BEGIN TRANSACTION": true, "SET NOCOUNT ON;\nBEGIN TRAN;": true,
			"BEGIN TRY SELECT 1 END TRY BEGIN CATCH SELECT 2 END CATCH": false, "BEGIN SELECT 1 END": false,
			"BEGIN": false, "SET IMPLICIT_TRANSACTIONS OFF": false, "SET NOCOUNT ON": false,
			"UPDATE transactions SET a = 1": false, "SELECT 'BEGIN TRAN'": false, "SELECT [begin tran]": false,
			"UPDATE t SET a = 1": false, "SELECT * FROM dbo.Transfers": false, "START TRANSACTION": false,
		},
		family.Other: {
			"BEGIN": true, "BEGIN TRY": true, "BEGIN TRAN": true, "BEGIN IMMEDIATE": true,
			"SET autocommit = 0": true, "SET IMPLICIT_TRANSACTIONS ON": true,
			"SET autocommit = 1": false, "SET IMPLICIT_TRANSACTIONS OFF": false,
			"SELECT 1": false, "UPDATE accounts SET balance = balance + ? WHERE id = ?": false,
		},
	} {
		d := dialectOf(fam)
		for q, want := range cases {
			assert.Equal(t, want, d.mayBegin(q), "%s: %q", fam, q)
		}
	}
}

// step is a statement text run on a session, and whether it failed.
type step struct {
	q      string
	failed bool
}

func ok(q string) step   { return step{q: q} }
func fail(q string) step { return step{q: q, failed: true} }

// What a sequence of statements leaves the session in, per family: the
// ends, the nesting, the sticky settings and the conservative readings.
func TestTxDialectWalk(t *testing.T) {
	for _, c := range []struct {
		name  string
		fam   family.Family
		steps []step
		want  []bool // in a transaction after each step
	}{
		{"begin commit", family.Postgres, []step{ok("BEGIN"), ok("UPDATE t SET a = 1"), ok("COMMIT")}, []bool{true, true, false}},
		{"end, abort", family.Postgres, []step{ok("BEGIN"), ok("END"), ok("START TRANSACTION"), ok("ABORT")}, []bool{true, false, true, false}},
		{"rollback to a savepoint", family.Postgres, []step{ok("BEGIN"), ok("ROLLBACK TO SAVEPOINT s"), ok("ROLLBACK TO s"), ok("ROLLBACK")}, []bool{true, true, true, false}},
		{"chain", family.Postgres, []step{ok("BEGIN"), ok("COMMIT AND CHAIN"), ok("COMMIT AND NO CHAIN")}, []bool{true, true, false}},
		{"prepared", family.Postgres, []step{ok("BEGIN"), ok("COMMIT PREPARED 'x'"), ok("PREPARE TRANSACTION 'x'")}, []bool{true, true, false}},
		{"a failed end ends nothing", family.Postgres, []step{ok("BEGIN"), fail("COMMIT"), ok("ROLLBACK")}, []bool{true, true, false}},
		{"a failed begin begins", family.Postgres, []step{fail("BEGIN")}, []bool{true}},
		{"a batch, in order", family.Postgres, []step{ok("BEGIN; UPDATE t SET a = 1; COMMIT"), ok("UPDATE t SET a = 1; BEGIN"), ok("COMMIT; SELECT 1")}, []bool{false, true, false}},
		{"the statement after an end", family.Postgres, []step{ok("BEGIN"), ok("COMMIT; BEGIN"), ok("ROLLBACK TO s; ROLLBACK; START TRANSACTION"), ok("END AND NO CHAIN;BEGIN;")}, []bool{true, true, true, true}},
		{"the statement after a setting", family.MySQL, []step{ok("SET autocommit = 0"), ok("SET autocommit = 1; START TRANSACTION"), ok("COMMIT;SET autocommit=0")}, []bool{true, true, true}},
		{"a failed batch keeps its begins", family.Postgres, []step{fail("BEGIN; UPDATE t SET a = 1; COMMIT")}, []bool{true}},
		{"a definition's body runs nothing", family.Postgres, []step{ok("BEGIN"), ok("CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; END")}, []bool{true, true}},
		{"autocommit off is sticky", family.MySQL, []step{ok("SET autocommit=0"), ok("COMMIT"), ok("UPDATE t SET a = 1"), ok("ROLLBACK"), ok("SET autocommit=1")}, []bool{true, true, true, true, false}},
		{"autocommit back on commits", family.MySQL, []step{ok("SET autocommit = 0"), ok("UPDATE t SET a = 1"), ok("SET autocommit = 1")}, []bool{true, true, false}},
		{"autocommit already on commits nothing", family.MySQL, []step{ok("START TRANSACTION"), ok("SET autocommit = 1"), ok("COMMIT")}, []bool{true, true, false}},
		{"a failed autocommit on", family.MySQL, []step{ok("SET autocommit = 0"), fail("SET autocommit = 1")}, []bool{true, true}},
		{"no nesting", family.MySQL, []step{ok("START TRANSACTION"), ok("BEGIN"), ok("COMMIT")}, []bool{true, true, false}},
		{"xa", family.MySQL, []step{ok("XA START 'x'"), ok("XA END 'x'"), ok("XA PREPARE 'x'"), ok("XA COMMIT 'x'")}, []bool{true, true, true, false}},
		{"rollback work to savepoint", family.MySQL, []step{ok("BEGIN"), ok("ROLLBACK WORK TO SAVEPOINT s"), ok("ROLLBACK WORK")}, []bool{true, true, false}},
		{"END is no end", family.MySQL, []step{ok("BEGIN"), ok("END")}, []bool{true, true}},
		{"nesting", family.SQLServer, []step{ok("BEGIN TRAN"), ok("BEGIN TRANSACTION"), ok("COMMIT"), ok("COMMIT TRAN")}, []bool{true, true, true, false}},
		{"rollback ends every level", family.SQLServer, []step{ok("BEGIN TRAN"), ok("BEGIN TRAN"), ok("ROLLBACK")}, []bool{true, true, false}},
		{"rollback to a name may be a savepoint", family.SQLServer, []step{ok("BEGIN TRAN"), ok("SAVE TRAN s"), ok("ROLLBACK TRAN s"), ok("ROLLBACK TRANSACTION"), ok("BEGIN TRAN"), ok("ROLLBACK WORK")}, []bool{true, true, true, false, true, false}},
		{"one text, no ';'", family.SQLServer, []step{ok("BEGIN TRAN UPDATE t SET a = 1 COMMIT TRAN t1"), ok("SET NOCOUNT ON BEGIN TRAN")}, []bool{false, true}},
		{"a begin after a commit's name", family.SQLServer, []step{ok("BEGIN TRAN"), ok("COMMIT TRAN BEGIN TRAN"), ok("COMMIT TRANSACTION t1 BEGIN TRAN t2")}, []bool{true, true, true}},
		{"an end under control flow", family.SQLServer, []step{ok("BEGIN TRAN"), ok("IF @@TRANCOUNT > 0 COMMIT"), ok("BEGIN TRY UPDATE t SET a = 1 COMMIT END TRY BEGIN CATCH ROLLBACK END CATCH"), ok("COMMIT")}, []bool{true, true, true, false}},
		{"a block is no transaction", family.SQLServer, []step{ok("BEGIN UPDATE t SET a = 1 END")}, []bool{false}},
		{"implicit transactions are sticky", family.SQLServer, []step{ok("SET IMPLICIT_TRANSACTIONS ON"), ok("COMMIT"), ok("SET IMPLICIT_TRANSACTIONS OFF")}, []bool{true, true, false}},
		{"implicit off leaves the open one open", family.SQLServer, []step{ok("SET IMPLICIT_TRANSACTIONS ON"), ok("UPDATE t SET a = 1"), ok("SET IMPLICIT_TRANSACTIONS OFF"), ok("ROLLBACK")}, []bool{true, true, true, false}},
		{"ansi defaults", family.SQLServer, []step{ok("SET ANSI_DEFAULTS ON"), ok("SET ANSI_DEFAULTS OFF")}, []bool{true, false}},
		{"other: every begin, plain ends", family.Other, []step{ok("BEGIN"), ok("END"), ok("COMMIT"), ok("BEGIN TRAN"), ok("BEGIN TRAN"), ok("COMMIT"), ok("ROLLBACK")}, []bool{true, true, false, true, true, true, false}},
		{"other: both sticky settings", family.Other, []step{ok("SET autocommit = 0"), ok("SET autocommit = 1"), ok("SET IMPLICIT_TRANSACTIONS ON"), ok("SET IMPLICIT_TRANSACTIONS OFF")}, []bool{true, false, true, false}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := dialectOf(c.fam)
			var st txState
			for i, s := range c.steps {
				st = d.walk(s.q, st, s.failed)
				assert.Equal(t, c.want[i], st.in(), "after %q (%+v)", s.q, st)
			}
		})
	}
}

// The test every statement outside a transaction takes allocates
// nothing, whatever the text.
func TestTxDialectMayBeginAllocatesNothing(t *testing.T) {
	for _, fam := range []family.Family{family.Other, family.SQLServer, family.MySQL, family.Postgres} {
		d := dialectOf(fam)
		for _, q := range []string{"UPDATE accounts SET balance = balance + ? WHERE id = ?", "BEGIN TRAN; SET autocommit = 0, names utf8", "/* x */ START TRANSACTION"} {
			assert.Zero(t, testing.AllocsPerRun(100, func() { d.mayBegin(q) }), "%s: %q", fam, q)
		}
	}
}

// A family crl does not know, or one out of the table, reads as Other.
func TestDialectOf(t *testing.T) {
	assert.Same(t, &txDialects[family.Other], dialectOf(family.Family(200)))
	assert.Same(t, &txDialects[family.MySQL], dialectOf(family.MySQL))
}

func BenchmarkTxDialectMayBegin(b *testing.B) {
	for _, fam := range []family.Family{family.Other, family.SQLServer, family.MySQL, family.Postgres} {
		d := dialectOf(fam)
		for _, q := range []string{"UPDATE accounts SET balance = balance + ? WHERE id = ?", "SELECT id, name FROM orders WHERE id = ?"} {
			b.Run(fam.String()+"/"+q[:6], func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					d.mayBegin(q)
				}
			})
		}
	}
}

// Any text: nothing panics, and the quick test never misses a text the
// full reading finds beginning a transaction (its shortcuts only skip
// texts that cannot begin one).
func FuzzTxDialect(f *testing.F) {
	for _, q := range []string{
		"BEGIN", "START TRANSACTION", "SET autocommit = 0, names utf8", "SET ANSI_NULLS, IMPLICIT_TRANSACTIONS ON",
		"SELECT 1; BEGIN", "BEGIN TRY SELECT 1 END TRY", "COMMIT TRAN t BEGIN TRAN", "/* x */ (begin", "xa start 'x'",
		"SET @@session.autocommit := (1)", "ROLLBACK TO s; ROLLBACK", "\xEF\xBB\xBFbegin", "SET ANSI_DEFAULTS ON", "'", "$$",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		for _, fam := range []family.Family{family.Other, family.SQLServer, family.MySQL, family.Postgres} {
			d := dialectOf(fam)
			full := d.walk(q, txState{}, true).in()
			if full && !d.mayBegin(q) {
				t.Fatalf("%s: %q begins a transaction, the quick test says it cannot", fam, q)
			}
			st := d.walk(q, txState{open: 1}, false)
			_ = d.walk(q, st, true)
		}
	})
}
