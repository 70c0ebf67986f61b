// Command ent is a small ledger on ent's SQL driver (entgo.io/ent/dialect/sql,
// what ent's generated client runs on: client.Tx calls the driver's Tx) that
// adopted crl in two places: the pool is opened with crl.Open instead of
// sql.Open, and the program's own transaction helper wraps ent's
// transaction in crl.Retry, which re-runs it whole after a deadlock. Every
// statement outside a transaction is retried by crl's driver layer.
//
// Run it with a PostgreSQL DSN in CRL_POSTGRES_DSN.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"os"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/crl-go/crl"
)

// Ledger moves money between accounts.
type Ledger struct{ drv *entsql.Driver }

// Open opens the ledger's pool: crl.Open instead of sql.Open is the first
// of the adoption's two changes.
func Open(dsn string) (*Ledger, error) {
	db, err := crl.Open("pgx", dsn)
	if err != nil {
		return nil, err
	}
	return &Ledger{drv: entsql.OpenDB(dialect.Postgres, db)}, nil
}

// Close closes the pool.
func (l *Ledger) Close() error { return l.drv.Close() }

// inTx runs fn in one of ent's transactions: crl.Retry around it is the
// second change. The transaction is begun with the context crl.Retry hands
// on, so the driver layer records which statement ended it.
func (l *Ledger) inTx(ctx context.Context, fn func(ctx context.Context, tx dialect.Tx) error) error {
	return crl.Retry(ctx, func(ctx context.Context) error {
		tx, err := l.drv.Tx(ctx)
		if err != nil {
			return err
		}
		if err := fn(ctx, tx); err != nil {
			return errors.Join(err, tx.Rollback())
		}
		return tx.Commit()
	})
}

// Transfer moves amount from one account to another in one transaction.
func (l *Ledger) Transfer(ctx context.Context, from, to, amount int) error {
	return l.inTx(ctx, func(ctx context.Context, tx dialect.Tx) error {
		var res sql.Result
		if err := tx.Exec(ctx, "UPDATE accounts SET balance = balance - $1 WHERE id = $2", []any{amount, from}, &res); err != nil {
			return err
		}
		return tx.Exec(ctx, "UPDATE accounts SET balance = balance + $1 WHERE id = $2", []any{amount, to}, &res)
	})
}

// Balance reads one account's balance, outside a transaction.
func (l *Ledger) Balance(ctx context.Context, id int) (int, error) {
	var rows entsql.Rows
	if err := l.drv.Query(ctx, "SELECT balance FROM accounts WHERE id = $1", []any{id}, &rows); err != nil {
		return 0, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("no account %d", id)
	}
	var b int
	if err := rows.Scan(&b); err != nil {
		return 0, err
	}
	return b, rows.Err()
}

func main() {
	dsn := os.Getenv("CRL_POSTGRES_DSN")
	if dsn == "" {
		log.Fatal("CRL_POSTGRES_DSN is not set")
	}
	l, err := Open(dsn)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	b, err := l.Balance(context.Background(), 1)
	fmt.Println(b, err)
}
