package crl_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/mssqltest"
)

// opCounter counts statements as a metrics hook does, without timing
// them (it has no OperationEnded): the statement loop keeps its direct
// path under it.
type opCounter struct{ statements atomic.Int64 }

func (o *opCounter) Operation(k core.Kind) {
	if k == core.KindStatement {
		o.statements.Add(1)
	}
}
func (o *opCounter) RetryScheduled(core.RetryScheduled) {}
func (o *opCounter) RetryContext(ctx context.Context, _ core.RetryScheduled) context.Context {
	return ctx
}
func (o *opCounter) GaveUp(core.GaveUp)               {}
func (o *opCounter) Succeeded(core.Succeeded)         {}
func (o *opCounter) RulesReloaded(core.RulesReloaded) {}

// TestASeenStatementsDirectAttemptIsRetried: a statement whose text the
// connection ran before runs its first attempt outside the statement
// loop (the direct path); when that attempt fails, the loop retries it as
// its own, with the rule's waits; an observer that counts operations sees
// one per statement, retried or not; a caller that opted out of retries
// gets the first error. Every kind: the connection's Exec, Query and
// QueryRow, a prepared statement's Exec and Query; the connection's
// statements run again in a string built anew, as GORM builds its texts.
func TestASeenStatementsDirectAttemptIsRetried(t *testing.T) {
	ctx := context.Background()
	readRows := mssqltest.Rows([]string{"balance"}, []any{int64(90)})
	for _, tc := range []struct {
		name  string
		query string
		reply mssqltest.Reply
		run   func(ctx context.Context, db *sql.DB, st *sql.Stmt, q string) error
	}{
		{"Exec", update, mssqltest.Affected(1), func(ctx context.Context, db *sql.DB, _ *sql.Stmt, q string) error {
			_, err := db.ExecContext(ctx, q)
			return err
		}},
		{"Query", read, readRows, func(ctx context.Context, db *sql.DB, _ *sql.Stmt, q string) error {
			return readBalance(db.QueryContext(ctx, q))
		}},
		{"QueryRow", read, readRows, func(ctx context.Context, db *sql.DB, _ *sql.Stmt, q string) error {
			var b int64
			return db.QueryRowContext(ctx, q).Scan(&b)
		}},
		{"StmtExec", update, mssqltest.Affected(1), func(ctx context.Context, _ *sql.DB, st *sql.Stmt, _ string) error {
			_, err := st.ExecContext(ctx)
			return err
		}},
		{"StmtQuery", read, readRows, func(ctx context.Context, _ *sql.DB, st *sql.Stmt, _ string) error {
			return readBalance(st.QueryContext(ctx))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mssqltest.NewServer(t)
			obs := &opCounter{}
			db, clock := open(t, srv, "&retryExec={1205:3,2*2}", config.WithObserver(obs))
			db.SetMaxOpenConns(1) // one connection, which has seen the text
			st, err := db.PrepareContext(ctx, tc.query)
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, st.Close()) })

			srv.Handle(tc.query, tc.reply)
			require.NoError(t, tc.run(ctx, db, st, tc.query), "the first run: the text is seen")
			srv.Handle(tc.query, mssqltest.Error(1205), mssqltest.Error(1205), tc.reply)
			before := srv.Count(tc.query)
			// A text built anew for the call (GORM's): the same content in
			// other bytes, seen as well.
			require.NoError(t, tc.run(ctx, db, st, strings.Clone(tc.query)))
			assert.Equal(t, 3, srv.Count(tc.query)-before, "attempts")
			assert.Equal(t, coretest.Seconds(2, 4), clock.Sleeps(), "waits")
			assert.EqualValues(t, 2, obs.statements.Load(), "one operation per statement")

			srv.Handle(tc.query, mssqltest.Error(1205), tc.reply)
			before = srv.Count(tc.query)
			err = tc.run(crl.WithoutRetry(ctx), db, st, tc.query)
			requireNumber(t, err, 1205)
			assert.Equal(t, 1, srv.Count(tc.query)-before, "opted out: one attempt")
		})
	}
}

// readBalance reads every row of a balance query and closes them.
func readBalance(rows *sql.Rows, err error) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var b int64
		if err := rows.Scan(&b); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Whether a query's first row is read inside its attempt (where an error
// met before it is retried) is remembered per text, for the policy in
// effect: a reload of the properties file between two runs of the same
// text changes it either way. Under a rule for updates, an error before a
// select's first row is met while the caller reads; under a rule for
// selects, it is retried. Every form of a query: a prepared statement's,
// which remembers the answer itself, and Query and QueryRow in a string
// built anew each time, which go-mssqldb prepares for each call (the
// connection's memo: TestRealTextBuiltAnewFollowsAReloadedPolicy).
func TestTheFirstRowFollowsAReloadedPolicy(t *testing.T) {
	ctx := context.Background()
	columns := []string{"balance"}
	for _, tc := range []struct {
		name string
		run  func(db *sql.DB, st *sql.Stmt) error
	}{
		{"Query", func(db *sql.DB, _ *sql.Stmt) error {
			return readBalance(db.QueryContext(ctx, strings.Clone(read)))
		}},
		{"QueryRow", func(db *sql.DB, _ *sql.Stmt) error {
			var b int64
			return db.QueryRowContext(ctx, strings.Clone(read)).Scan(&b)
		}},
		{"StmtQuery", func(_ *sql.DB, st *sql.Stmt) error { return readBalance(st.QueryContext(ctx)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mssqltest.NewServer(t)
			path := filepath.Join(t.TempDir(), "mssql-jdbc.properties")
			write := func(rules string) {
				require.NoError(t, os.WriteFile(path, []byte("retryExec="+rules+"\n"), 0o644))
			}
			write("{1205:3,0+0:update}")
			db, _ := open(t, srv, "", config.WithPropertiesFile(path))
			db.SetMaxOpenConns(1) // one connection, which remembers the text
			rt, ok := crl.RuntimeOf(db)
			require.True(t, ok)
			st, err := db.PrepareContext(ctx, read)
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, st.Close()) })
			srv.Handle(read, mssqltest.Rows(columns, []any{int64(90)}))
			require.NoError(t, tc.run(db, st), "the first run: the text is seen")

			for _, c := range []struct {
				rules   string
				retried bool
			}{
				{"{1205:3,0+0:update}", false},
				{"{1205:3,0+0:select}", true},
				{"{1205:3,0+0:update}", false},
			} {
				write(c.rules)
				require.NoError(t, rt.Reload())
				srv.Handle(read, mssqltest.RowsThenError(1205, columns), mssqltest.Rows(columns, []any{int64(90)}))
				before := srv.Count(read)
				err := tc.run(db, st)
				if c.retried {
					require.NoError(t, err, c.rules)
					assert.Equal(t, 2, srv.Count(read)-before, "%s: attempts", c.rules)
				} else {
					requireNumber(t, err, 1205)
					assert.Equal(t, 1, srv.Count(read)-before, "%s: attempts", c.rules)
				}
			}
		})
	}
}
