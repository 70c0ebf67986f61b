// Command bun is a small order service written with github.com/uptrace/bun
// on PostgreSQL (pgx's database/sql driver), as a bun user writes it: the
// store opens a *sql.DB, hands it to bun.NewDB, and runs its work through
// bun's query builders and bun's own transaction API (db.RunInTx).
//
// It adopted crl by changing two places and nothing else (README.md shows
// the diff): the line that opens the pool (sql.Open → crl.Open) and the
// body of the store's transaction helper (bun's RunInTx inside crl.Retry).
// The retry rules sit in the DSN, as a Java team's sit in its JDBC URL:
//
//	CRL_POSTGRES_DSN='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
//	  go run . '&retryExec={40P01,40001:3,10ms*2}'
//
// Every statement the store runs outside a transaction (PlaceOrder's
// INSERT, OrdersOf's SELECT) is retried by the driver layer; Transfer's
// transaction is re-run whole.
//
// This is a module of its own, so that crl requires no bun.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // registers pgx
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/crl-go/crl"
)

// Account is a customer's account; Balance is in cents.
type Account struct {
	bun.BaseModel `bun:"table:accounts"`

	ID      int64  `bun:"id,pk,autoincrement"`
	Owner   string `bun:"owner,notnull"`
	Balance int64  `bun:"balance,notnull"`
}

// Order is an order charged to an account. Ref is the client's
// idempotency key: a second order with the same Ref is refused.
type Order struct {
	bun.BaseModel `bun:"table:orders"`

	ID        int64    `bun:"id,pk,autoincrement"`
	Ref       string   `bun:"ref,notnull,unique"`
	AccountID int64    `bun:"account_id,notnull"`
	Account   *Account `bun:"rel:belongs-to,join:account_id=id"`
	Amount    int64    `bun:"amount,notnull"`
}

// Transfer is one committed movement of money between two accounts.
type Transfer struct {
	bun.BaseModel `bun:"table:transfers"`

	ID     int64 `bun:"id,pk,autoincrement"`
	FromID int64 `bun:"from_id,notnull"`
	ToID   int64 `bun:"to_id,notnull"`
	Amount int64 `bun:"amount,notnull"`
}

// ErrInsufficientFunds is the error of Transfer when the source account
// holds less than the amount.
var ErrInsufficientFunds = errors.New("store: insufficient funds")

// Store is the service's data access.
type Store struct {
	db *bun.DB
}

// Open opens the store's pool on PostgreSQL; it does not connect.
func Open(dsn string) (*Store, error) {
	sqldb, err := crl.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open: %w", err)
	}
	return &Store{db: bun.NewDB(sqldb, pgdialect.New())}, nil
}

// Close closes the pool.
func (s *Store) Close() error { return s.db.Close() }

// CreateSchema creates the store's tables when they do not exist.
func (s *Store) CreateSchema(ctx context.Context) error {
	return s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewCreateTable().Model((*Account)(nil)).IfNotExists().Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewCreateTable().Model((*Order)(nil)).IfNotExists().
			ForeignKey(`("account_id") REFERENCES "accounts" ("id")`).Exec(ctx); err != nil {
			return err
		}
		_, err := tx.NewCreateTable().Model((*Transfer)(nil)).IfNotExists().
			ForeignKey(`("from_id") REFERENCES "accounts" ("id")`).
			ForeignKey(`("to_id") REFERENCES "accounts" ("id")`).Exec(ctx)
		return err
	})
}

// OpenAccount creates an account for owner with an opening balance.
func (s *Store) OpenAccount(ctx context.Context, owner string, balance int64) (*Account, error) {
	a := &Account{Owner: owner, Balance: balance}
	if _, err := s.db.NewInsert().Model(a).Returning("id").Exec(ctx); err != nil {
		return nil, fmt.Errorf("store: open account of %q: %w", owner, err)
	}
	return a, nil
}

// PlaceOrder records an order of amount cents on an account, in one
// autocommit INSERT.
func (s *Store) PlaceOrder(ctx context.Context, ref string, accountID, amount int64) (*Order, error) {
	o := &Order{Ref: ref, AccountID: accountID, Amount: amount}
	if _, err := s.db.NewInsert().Model(o).Returning("id").Exec(ctx); err != nil {
		return nil, fmt.Errorf("store: place order %q: %w", ref, err)
	}
	return o, nil
}

// OrdersOf lists an owner's orders, with their accounts, oldest first.
func (s *Store) OrdersOf(ctx context.Context, owner string) ([]Order, error) {
	var orders []Order
	err := s.db.NewSelect().Model(&orders).Relation("Account").
		Where("account.owner = ?", owner).Order("order.id").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: orders of %q: %w", owner, err)
	}
	return orders, nil
}

// Balance returns an account's balance.
func (s *Store) Balance(ctx context.Context, accountID int64) (int64, error) {
	var balance int64
	err := s.db.NewSelect().Model((*Account)(nil)).Column("balance").
		Where("id = ?", accountID).Scan(ctx, &balance)
	if err != nil {
		return 0, fmt.Errorf("store: balance of account %d: %w", accountID, err)
	}
	return balance, nil
}

// Transfer moves amount cents from one account to another and records
// the transfer, all or nothing.
func (s *Store) Transfer(ctx context.Context, fromID, toID, amount int64) error {
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Model((*Account)(nil)).
			Set("balance = balance - ?", amount).
			Where("id = ? AND balance >= ?", fromID, amount).Exec(ctx)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != 1 {
			return ErrInsufficientFunds
		}
		if _, err := tx.NewUpdate().Model((*Account)(nil)).
			Set("balance = balance + ?", amount).
			Where("id = ?", toID).Exec(ctx); err != nil {
			return err
		}
		_, err = tx.NewInsert().Model(&Transfer{FromID: fromID, ToID: toID, Amount: amount}).Exec(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: transfer %d from %d to %d: %w", amount, fromID, toID, err)
	}
	return nil
}

// inTx runs fn in a transaction of the store's pool.
func (s *Store) inTx(ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	return crl.Retry(ctx, func(ctx context.Context) error {
		return s.db.RunInTx(ctx, nil, fn)
	})
}

func main() {
	dsn := os.Getenv("CRL_POSTGRES_DSN")
	if dsn == "" {
		log.Fatal("bun example: set CRL_POSTGRES_DSN to a PostgreSQL URL")
	}
	if len(os.Args) > 1 {
		dsn += os.Args[1] // retry settings, such as &retryExec={40P01:3,10ms*2}
	}
	if err := run(context.Background(), os.Stdout, dsn); err != nil {
		log.Fatal(err)
	}
}

// run creates the schema, opens two accounts, places an order, makes a
// transfer and prints the balances and the orders.
func run(ctx context.Context, w io.Writer, dsn string) error {
	s, err := Open(dsn)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.CreateSchema(ctx); err != nil {
		return err
	}
	ada, err := s.OpenAccount(ctx, "ada", 10000)
	if err != nil {
		return err
	}
	bob, err := s.OpenAccount(ctx, "bob", 0)
	if err != nil {
		return err
	}
	ref := fmt.Sprintf("ada-%d", ada.ID)
	if _, err := s.PlaceOrder(ctx, ref, ada.ID, 2500); err != nil {
		return err
	}
	if err := s.Transfer(ctx, ada.ID, bob.ID, 4000); err != nil {
		return err
	}
	for _, a := range []*Account{ada, bob} {
		b, err := s.Balance(ctx, a.ID)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s: %d.%02d\n", a.Owner, b/100, b%100)
	}
	orders, err := s.OrdersOf(ctx, "ada")
	if err != nil {
		return err
	}
	refs := make([]string, 0, len(orders))
	for _, o := range orders {
		refs = append(refs, o.Ref)
	}
	fmt.Fprintf(w, "orders of ada: %s\n", strings.Join(refs, ", "))
	return nil
}
