package crl

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/tables/family"
	"github.com/crl-go/crl/internal/testsupport/optdriver"
)

// argSets are the arguments of optScenario's statements: a plain value,
// types only the driver knows (its statement's ColumnConverter, its
// connection's and its statement's NamedValueChecker), an argument its
// checkers remove, a named argument, a driver.Valuer, every type the
// layer converts itself where the driver leaves it to database/sql
// (knownValue) and types of the same kinds it leaves to database/sql, and
// a value database/sql's conversion refuses.
// Each of those is a set of its own, so that a prepared statement of one
// placeholder receives it too.
var argSets = append([][]any{
	{int64(1)}, {optdriver.Money{Cents: 250}}, {int64(2), optdriver.Drop{}},
	{optdriver.ConnOnly{S: "a"}}, {optdriver.StmtOnly{S: "b"}},
	{sql.Named("x", int64(3))}, {sql.NullInt64{Int64: 4, Valid: true}},
	{uint64(1) << 63}, {[2]byte{1, 2}},
}, oneEach(knownArgs, otherArgs)...)

// oneEach returns each value of the lists as a set of one.
func oneEach(lists ...[]any) [][]any {
	var sets [][]any
	for _, l := range lists {
		for _, v := range l {
			sets = append(sets, []any{v})
		}
	}
	return sets
}

// optScenario runs on db what the comparison looks at, noting each call's
// outcome in d's record between what the driver received: the arguments
// of argSets on the connection, on a prepared statement and in a
// transaction; driver.ErrSkip; a driver's error; transaction options;
// Ping; then optPoolScenario.
func optScenario(t *testing.T, db *sql.DB, d *optdriver.Driver) {
	ctx := context.Background()
	for _, args := range argSets {
		_, err := db.ExecContext(ctx, "EXEC ?", args...)
		d.Note("=> Exec %v: %v", args, err)
		d.Note("=> Query %v: %v", args, readAll(db.QueryContext(ctx, "QUERY ?", args...)))
	}
	st, err := db.PrepareContext(ctx, "PREP ?")
	d.Note("=> Prepare: %v", err)
	if err == nil {
		for _, args := range argSets {
			_, err := st.ExecContext(ctx, args...)
			d.Note("=> Stmt.Exec %v: %v", args, err)
			d.Note("=> Stmt.Query %v: %v", args, readAll(st.QueryContext(ctx, args...)))
		}
		d.Note("=> Stmt.Close: %v", st.Close())
	}
	_, err = db.ExecContext(ctx, "SKIP")
	d.Note("=> Exec SKIP: %v", err)
	d.Note("=> Query SKIP: %v", readAll(db.QueryContext(ctx, "SKIP")))
	_, err = db.ExecContext(ctx, "FAIL ?", 1)
	d.Note("=> Exec FAIL: %v", err)
	d.Note("=> Query FAIL: %v", readAll(db.QueryContext(ctx, "FAIL ?", 1)))
	for _, opts := range []*sql.TxOptions{nil, {Isolation: sql.LevelSerializable}, {ReadOnly: true}} {
		tx, err := db.BeginTx(ctx, opts)
		d.Note("=> BeginTx %+v: %v", opts, err)
		if err == nil {
			_, err = tx.ExecContext(ctx, "EXEC ?", optdriver.Money{Cents: 5})
			d.Note("=> Tx.Exec: %v", err)
			d.Note("=> Tx.Query: %v", readAll(tx.QueryContext(ctx, "QUERY ?", optdriver.StmtOnly{S: "c"})))
			d.Note("=> Tx.Commit: %v", tx.Commit())
		}
	}
	d.Note("=> Ping: %v", db.PingContext(ctx))
	optPoolScenario(t, db, d)
}

// optPoolScenario is the part of optScenario about which connections
// database/sql keeps, on a pool of one connection: a connection the
// driver says is invalid (Validator), one whose reset fails
// (SessionResetter), a broken one (driver.ErrBadConn), one whose
// transaction's context ended (kept only with SessionResetter and
// Validator). The statement after each tells which connection it ran on.
func optPoolScenario(t *testing.T, db *sql.DB, d *optdriver.Driver) {
	ctx := context.Background()
	for _, q := range []string{"INVALIDATE", "RESETFAIL", "BADCONN"} {
		_, err := db.ExecContext(ctx, q)
		d.Note("=> %s: %v", q, err)
		_, err = db.ExecContext(ctx, "EXEC ?", 1)
		d.Note("=> Exec after %s: %v", q, err)
	}
	tctx, cancel := context.WithCancel(ctx)
	tx, err := db.BeginTx(tctx, nil)
	require.NoError(t, err)
	last := d.Opened()
	cancel()
	<-d.RolledBack()
	// database/sql releases the connection after the Rollback, on its
	// goroutine: wait until it is closed or back in the pool.
	deadline := time.Now().Add(10 * time.Second)
	for !d.Closed(last) && db.Stats().Idle == 0 {
		require.True(t, time.Now().Before(deadline), "the connection is neither closed nor back in the pool")
		runtime.Gosched()
	}
	d.Note("=> Tx.Rollback after its context ended: %v", tx.Rollback())
	_, err = db.ExecContext(ctx, "EXEC ?", 1)
	d.Note("=> Exec after a transaction's context ended: %v", err)
}

// optSkipScenario runs statements with arguments on a driver whose
// connection answers driver.ErrSkip to every one: database/sql prepares
// them.
func optSkipScenario(db *sql.DB, d *optdriver.Driver) {
	ctx := context.Background()
	for _, args := range argSets {
		_, err := db.ExecContext(ctx, "EXEC ?", args...)
		d.Note("=> Exec %v: %v", args, err)
		d.Note("=> Query %v: %v", args, readAll(db.QueryContext(ctx, "QUERY ?", args...)))
	}
	_, err := db.ExecContext(ctx, "EXEC")
	d.Note("=> Exec without arguments: %v", err)
}

// readAll reads rows to their end.
func readAll(rows *sql.Rows, err error) error {
	if err != nil {
		return err
	}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return errors.Join(err, rows.Close())
		}
	}
	return errors.Join(rows.Err(), rows.Close())
}

// optRun runs the scenario on a pool of one connection over a new
// optdriver with the given sets, through database/sql alone or through the
// driver layer (under rules that retry none of the driver's errors), and
// returns the driver's record.
func optRun(t *testing.T, conns optdriver.ConnSet, stmts optdriver.StmtSet, skipArgs, layer bool) []string {
	d := optdriver.New(conns, stmts, skipArgs)
	var c driver.Connector = d
	if layer {
		rules, err := core.ParseStatementRules("{1205:3,0+0}")
		require.NoError(t, err)
		r, err := core.NewRetrier(core.Policy{Statement: rules}, core.Options{})
		require.NoError(t, err)
		c, err = wrapConnector(d, poolSettings{Family: family.Of("optdriver"), Retrier: r})
		require.NoError(t, err)
	}
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(1)
	if skipArgs {
		optSkipScenario(db, d)
	} else {
		optScenario(t, db, d)
	}
	require.NoError(t, db.Close())
	return d.Log()
}

// What database/sql does through the driver layer is what it does with
// the driver alone, for every set of optional interfaces on the driver's
// connection and on its statement: the values the driver receives (its
// own argument types, driver.ErrRemoveArgument, named arguments, a
// driver.Valuer), where database/sql prepares (driver.ErrSkip), the
// transaction options, Ping, the errors, and which connections
// database/sql keeps (Validator, SessionResetter, driver.ErrBadConn, a
// transaction whose context ended).
//
// Under the race detector or -short, each set of the connection's
// interfaces runs once, with the statement's sets and driver.ErrSkip in
// turn: the scenario runs on one goroutine, and the whole product would
// take minutes there.
func TestLayerOffersWhatTheDriverOffers(t *testing.T) {
	sample := testing.Short() || raceEnabled
	failures := 0
	for conns := range optdriver.ConnSets {
		for stmts := range optdriver.StmtSets {
			for _, skipArgs := range []bool{false, true} {
				turn := int(conns) % int(optdriver.StmtSets)
				if sample && (int(stmts) != turn || skipArgs != (int(conns)/int(optdriver.StmtSets)%2 == 1)) {
					continue
				}
				alone := optRun(t, conns, stmts, skipArgs, false)
				layer := optRun(t, conns, stmts, skipArgs, true)
				if !assert.Equal(t, alone, layer, "connection %s, statement %s, skipArgs %t", conns, stmts, skipArgs) {
					if failures++; failures == 3 {
						t.FailNow()
					}
				}
			}
		}
	}
}

// The driver layer's connection has ExecerContext, QueryerContext,
// SessionResetter and Validator exactly when the driver's has them (or,
// for the first two, Execer and Queryer), never Execer or Queryer (they
// take no context), always ConnPrepareContext and ConnBeginTx (the layer
// needs the context), and Unwrap finds the driver's connection under
// each of its types.
func TestLayerConnectionTypes(t *testing.T) {
	r, err := core.NewRetrier(core.Policy{}, core.Options{})
	require.NoError(t, err)
	for conns := range optdriver.ConnSets {
		d := optdriver.New(conns, 0, false)
		c, err := wrapConnector(d, poolSettings{Family: family.Of("optdriver"), Retrier: r})
		require.NoError(t, err)
		lc, err := c.Connect(context.Background())
		require.NoError(t, err)
		has := func(s optdriver.ConnSet) bool { return conns&s != 0 }
		_, e := lc.(driver.ExecerContext)
		_, eo := lc.(driver.Execer) //nolint:staticcheck // never offered
		_, q := lc.(driver.QueryerContext)
		_, qo := lc.(driver.Queryer) //nolint:staticcheck // never offered
		_, p := lc.(driver.ConnPrepareContext)
		_, b := lc.(driver.ConnBeginTx)
		_, rs := lc.(driver.SessionResetter)
		_, v := lc.(driver.Validator)
		assert.Equal(t,
			[]bool{has(optdriver.ExecerContext | optdriver.Execer), false, has(optdriver.QueryerContext | optdriver.Queryer), false,
				true, true, has(optdriver.SessionResetter), has(optdriver.Validator)},
			[]bool{e, eo, q, qo, p, b, rs, v}, "driver's connection %s", conns)
		n, ok := optdriver.Number(Unwrap(lc))
		assert.True(t, ok && n == d.Opened(), "Unwrap gives the driver's connection")
		require.NoError(t, lc.Close())
	}
}
