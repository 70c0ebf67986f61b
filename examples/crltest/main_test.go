package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/crltest"
	"github.com/crl-go/crl/mssqltest"
)

// openBank opens a crl pool with the driver's rules and a recording
// observer, and a bank with tables of its own on it (created when create
// is set: mssqltest runs no SQL).
func openBank(t *testing.T, driverName, dsn string, create bool) (*bank, *coretest.Observer) {
	t.Helper()
	obs := &coretest.Observer{}
	db, err := crl.Open(driverName, dsn, crl.WithRetryExec(rules[driverName]), config.WithObserver(obs))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	b := newBank(db, driverName, fmt.Sprintf("bank%d", rand.Uint32()))
	if create {
		require.NoError(t, b.create(context.Background(), 100, 100))
		t.Cleanup(func() { assert.NoError(t, b.drop(context.Background())) })
	}
	return b, obs
}

// balances reads accounts 1 and 2.
func balances(t *testing.T, b *bank) [2]int64 {
	t.Helper()
	var out [2]int64
	for i := range out {
		n, err := b.balance(context.Background(), i+1)
		require.NoError(t, err)
		out[i] = n
	}
	return out
}

func TestBankOnMariaDB(t *testing.T) {
	dsn := os.Getenv("CRL_MYSQL_DSN")
	if dsn == "" {
		t.Skip("CRL_MYSQL_DSN is not set")
	}
	testBank(t, "mysql", dsn, func(t *testing.T, err error) string {
		var me *mysql.MySQLError
		require.ErrorAs(t, err, &me, "the driver's own type")
		return fmt.Sprint(me.Number)
	})
}

func TestBankOnPostgreSQL(t *testing.T) {
	dsn := os.Getenv("CRL_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("CRL_POSTGRES_DSN is not set")
	}
	testBank(t, "pgx", dsn, func(t *testing.T, err error) string {
		var pe *pgconn.PgError
		require.ErrorAs(t, err, &pe, "the driver's own type")
		return pe.Code
	})
}

// testBank proves the bank's code retry-safe on a real server: each
// fault is injected before the server, the retry is crl's, and the data
// is read back from the server. code returns the error's number or
// SQLSTATE, read through the driver's own type.
func testBank(t *testing.T, driverName, dsn string, code func(*testing.T, error) string) {
	ctx := context.Background()
	fam := driverName // crltest knows the driver names too

	t.Run("a deadlock in the transfer", func(t *testing.T) {
		b, obs := openBank(t, driverName, dsn, true)
		defer crltest.Inject(b.db, crltest.Fault{Err: crltest.Deadlock(fam), Match: "balance = balance +", InTx: true, Times: 1})()
		require.NoError(t, b.transfer(ctx, 1, 2, 10))
		assert.Equal(t, [2]int64{90, 110}, balances(t, b), "moved once: the first attempt's debit was rolled back")
		ev := obs.Snapshot()
		require.Len(t, ev.Retries, 1, "the transaction ran again")
		assert.Equal(t, core.KindTransaction, ev.Retries[0].Kind)
		assert.Equal(t, b.credit, ev.Retries[0].Query)
	})

	t.Run("a serialization failure at COMMIT", func(t *testing.T) {
		b, obs := openBank(t, driverName, dsn, true)
		defer crltest.Inject(b.db, crltest.Fault{Err: crltest.Serialization(fam), Kind: crltest.Commit, Times: 1})()
		require.NoError(t, b.transfer(ctx, 1, 2, 10))
		assert.Equal(t, [2]int64{90, 110}, balances(t, b), "the refused COMMIT rolled back, the second committed")
		require.Len(t, obs.Snapshot().Retries, 1)
		assert.Equal(t, "COMMIT", obs.Snapshot().Retries[0].Query)
	})

	t.Run("a deadlock of an autocommit insert", func(t *testing.T) {
		b, obs := openBank(t, driverName, dsn, true)
		defer crltest.Inject(b.db, crltest.Fault{Err: crltest.Deadlock(fam), Match: "INSERT INTO " + b.journal, Times: 2})()
		require.NoError(t, b.record(ctx, "opened"))
		n, err := b.entries(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, n, "one entry")
		assert.Len(t, obs.Snapshot().Retries, 2)
	})

	t.Run("a deadlock of a read", func(t *testing.T) {
		b, obs := openBank(t, driverName, dsn, true)
		defer crltest.Inject(b.db, crltest.Fault{Err: crltest.Deadlock(fam), Kind: crltest.Query, Times: 1})()
		n, err := b.balance(ctx, 1)
		require.NoError(t, err)
		assert.Equal(t, int64(100), n)
		assert.Len(t, obs.Snapshot().Retries, 1)
	})

	t.Run("retries used up: the driver's error, nothing moved", func(t *testing.T) {
		b, _ := openBank(t, driverName, dsn, true)
		undo := crltest.Inject(b.db, crltest.Fault{Err: crltest.Deadlock(fam), Match: "balance = balance +", InTx: true})
		err := b.transfer(ctx, 1, 2, 10)
		require.ErrorIs(t, err, core.ErrRetriesExhausted)
		assert.Equal(t, code(t, crltest.Deadlock(fam)), code(t, err))
		assert.Equal(t, [2]int64{100, 100}, balances(t, b))

		undo()
		require.NoError(t, b.transfer(ctx, 1, 2, 10), "undo restores")
		assert.Equal(t, [2]int64{90, 110}, balances(t, b))
	})

	t.Run("an injected statement never reaches the server", func(t *testing.T) {
		b, obs := openBank(t, driverName, dsn, true)
		fault := crltest.LockTimeout(fam) // no rule retries it
		defer crltest.Inject(b.db, crltest.Fault{Err: fault, Match: "INSERT INTO " + b.journal})()
		err := b.record(ctx, "lost")
		assert.Equal(t, fault, err, "the driver's value, unwrapped")
		n, err := b.entries(ctx)
		require.NoError(t, err)
		assert.Zero(t, n, "the server inserted nothing: it never saw the INSERT")
		assert.Empty(t, obs.Snapshot().Retries)
	})
}

// On SQL Server (the mssqltest stand-in, which runs no SQL), the server's
// record of the statements it received and the transactions it committed
// or rolled back is the data.
func TestBankOnSQLServer(t *testing.T) {
	ctx := context.Background()
	open := func(t *testing.T) (*mssqltest.Server, *bank, *coretest.Observer) {
		srv := mssqltest.NewServer(t)
		b, obs := openBank(t, "sqlserver", srv.DSN(), false)
		srv.Handle(b.debit, mssqltest.Affected(1))
		srv.Handle(b.credit, mssqltest.Affected(1))
		srv.Handle(b.note, mssqltest.Affected(1))
		srv.Handle(b.read, mssqltest.Rows([]string{"balance"}, []any{int64(100)}))
		return srv, b, obs
	}

	t.Run("a deadlock in the transfer", func(t *testing.T) {
		srv, b, obs := open(t)
		defer crltest.Inject(b.db, crltest.Fault{Err: crltest.Deadlock("sqlserver"), Match: "balance = balance +", InTx: true, Times: 1})()
		require.NoError(t, b.transfer(ctx, 1, 2, 10))
		assert.Equal(t, [][]string{{b.debit}}, srv.RolledBack(), "the first attempt's debit, rolled back")
		assert.Equal(t, [][]string{{b.debit, b.credit}}, srv.Committed(), "one transfer")
		assert.Equal(t, 1, srv.Count(b.credit), "the injected deadlock never reached the server")
		require.Len(t, obs.Snapshot().Retries, 1)
	})

	t.Run("a serialization failure at COMMIT", func(t *testing.T) {
		srv, b, _ := open(t)
		defer crltest.Inject(b.db, crltest.Fault{Err: crltest.Serialization("sqlserver"), Kind: crltest.Commit, Times: 1})()
		require.NoError(t, b.transfer(ctx, 1, 2, 10))
		assert.Equal(t, [][]string{{b.debit, b.credit}}, srv.RolledBack())
		assert.Equal(t, [][]string{{b.debit, b.credit}}, srv.Committed())
		assert.Equal(t, 1, srv.Count("COMMIT TRANSACTION"))
	})

	t.Run("a deadlock of an autocommit insert and of a read", func(t *testing.T) {
		srv, b, obs := open(t)
		defer crltest.Inject(b.db, crltest.Fault{Err: crltest.Deadlock("sqlserver"), Times: 2})()
		require.NoError(t, b.record(ctx, "opened"))
		n, err := b.balance(ctx, 1)
		require.NoError(t, err)
		assert.Equal(t, int64(100), n)
		assert.Equal(t, 1, srv.Count(b.note))
		assert.Equal(t, 1, srv.Count(b.read))
		assert.Len(t, obs.Snapshot().Retries, 2)
	})

	t.Run("retries used up: the driver's error, nothing committed", func(t *testing.T) {
		srv, b, _ := open(t)
		undo := crltest.Inject(b.db, crltest.Fault{Err: crltest.Deadlock("sqlserver"), Match: "balance = balance +", InTx: true})
		err := b.transfer(ctx, 1, 2, 10)
		require.ErrorIs(t, err, core.ErrRetriesExhausted)
		var me mssql.Error
		require.ErrorAs(t, err, &me, "the driver's own type")
		assert.Equal(t, int32(1205), me.Number)
		assert.Empty(t, srv.Committed())
		assert.Zero(t, srv.Count(b.credit))

		undo()
		require.NoError(t, b.transfer(ctx, 1, 2, 10), "undo restores")
		assert.Len(t, srv.Committed(), 1)
	})
}

// errors.Is and errors.As find the driver's error in what a transfer
// returns, whichever loop gave up.
func TestTransferErrorIsTheDrivers(t *testing.T) {
	srv := mssqltest.NewServer(t)
	b, _ := openBank(t, "sqlserver", srv.DSN(), false)
	defer crltest.Inject(b.db, crltest.Fault{Err: crltest.Deadlock("sqlserver"), Kind: crltest.Exec, InTx: true})()
	err := b.transfer(context.Background(), 1, 2, 10)
	var me mssql.Error
	require.True(t, errors.As(err, &me))
	assert.Equal(t, crltest.Deadlock("sqlserver"), me)
	assert.False(t, errors.Is(err, sql.ErrNoRows))
}
