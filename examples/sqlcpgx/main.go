// Command sqlcpgx is a small accounts service over sqlc's pgx/v5 code
// (db/), as an sqlc user writes it: the generated Queries over a pgx
// pool. It adopted crl by changing the line that opens the pool
// (pgxpool.New became pgxcrl.Open) and its import; the generated code is
// untouched, and the retry rules come from the connection string
// (retryExec=…) or the properties file.
//
// Run it against a PostgreSQL database (the schema is schema.sql):
//
//	DATABASE_URL='postgres://app@127.0.0.1/app?retryExec={40P01,40001:3,100ms*2}' go run .
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/crl-go/crl/examples/sqlcpgx/db"
	"github.com/crl-go/crl/pgxcrl"
)

// Pool is what the store runs its queries on: sqlc's DBTX, which both
// *pgxpool.Pool and *pgxcrl.Pool are, and Close.
type Pool interface {
	db.DBTX
	Close()
}

// Store is the accounts service's storage.
type Store struct {
	pool Pool
	q    *db.Queries
}

// NewStore returns the store over pool.
func NewStore(pool Pool) *Store { return &Store{pool: pool, q: db.New(pool)} }

// Open opens the store's pool on PostgreSQL; it does not connect.
func Open(ctx context.Context, dsn string) (*Store, error) {
	pool, err := pgxcrl.Open(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open: %w", err)
	}
	return NewStore(pool), nil
}

// Close closes the store's pool.
func (s *Store) Close() { s.pool.Close() }

// Create opens an account with an opening balance.
func (s *Store) Create(ctx context.Context, owner string, balance int64) (db.Account, error) {
	return s.q.CreateAccount(ctx, db.CreateAccountParams{Owner: owner, Balance: balance})
}

// Account returns one account.
func (s *Store) Account(ctx context.Context, id int64) (db.Account, error) {
	return s.q.GetAccount(ctx, id)
}

// Accounts returns every account.
func (s *Store) Accounts(ctx context.Context) ([]db.Account, error) {
	return s.q.ListAccounts(ctx)
}

// Deposit adds amount to an account.
func (s *Store) Deposit(ctx context.Context, id, amount int64) error {
	return s.q.Deposit(ctx, db.DepositParams{ID: id, Balance: amount})
}

// Transfer moves amount between two accounts in one statement (an
// autocommit UPDATE with a data-modifying WITH: both rows or neither; it
// locks the debited row first, then the credited one).
func (s *Store) Transfer(ctx context.Context, from, to, amount int64) error {
	n, err := s.q.Transfer(ctx, db.TransferParams{Amount: amount, FromID: from, ToID: to})
	if err != nil {
		return fmt.Errorf("store: transfer %d from %d to %d: %w", amount, from, to, err)
	}
	if n != 1 {
		return fmt.Errorf("store: transfer %d from %d to %d: no such account", amount, from, to)
	}
	return nil
}

func main() {
	ctx := context.Background()
	s, err := Open(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	a, err := s.Create(ctx, "alice", 100)
	if err != nil {
		log.Fatal(err)
	}
	b, err := s.Create(ctx, "bob", 0)
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Transfer(ctx, a.ID, b.ID, 30); err != nil {
		log.Fatal(err)
	}
	accounts, err := s.Accounts(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, acct := range accounts {
		fmt.Printf("%s: %d\n", acct.Owner, acct.Balance)
	}
}
