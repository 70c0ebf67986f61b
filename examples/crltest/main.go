// Command crltest is a small bank, the code under test of crltest's
// example tests (main_test.go): a transfer is a transaction run by
// crl.RunInTx, a journal entry an autocommit INSERT, a balance a read. The
// tests inject a deadlock, a serialization failure or a failure at COMMIT
// with crltest.Inject, on SQL Server (the mssqltest stand-in), MariaDB and
// PostgreSQL, and prove that the bank's code is retried and leaves the
// data right.
//
// Run against a server, it opens the bank, moves 10 from account 1 to
// account 2, and prints the balances:
//
//	go run ./examples/crltest -driver mysql -dsn 'root@tcp(127.0.0.1:3306)/test'
//	go run ./examples/crltest -driver pgx -dsn 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/microsoft/go-mssqldb"

	"github.com/crl-go/crl"
)

func main() {
	driverName := flag.String("driver", "mysql", "the database/sql driver: mysql, pgx or sqlserver")
	dsn := flag.String("dsn", "", "the driver's DSN")
	flag.Parse()
	if err := run(*driverName, *dsn); err != nil {
		fmt.Fprintln(os.Stderr, "crltest example:", err)
		os.Exit(1)
	}
}

func run(driverName, dsn string) (err error) {
	ctx := context.Background()
	db, err := crl.Open(driverName, dsn, crl.WithRetryExec(rules[driverName]))
	if err != nil {
		return err
	}
	defer db.Close()
	b := newBank(db, driverName, fmt.Sprintf("bank%d", rand.Uint32()))
	if err := b.create(ctx, 100, 100); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, b.drop(ctx)) }()
	if err := b.transfer(ctx, 1, 2, 10); err != nil {
		return err
	}
	for id := 1; id <= 2; id++ {
		n, err := b.balance(ctx, id)
		if err != nil {
			return err
		}
		fmt.Printf("account %d: %d\n", id, n)
	}
	return nil
}

// rules are the retryExec rules of each driver's pools: its family's
// deadlock victims and serialization failures, 3 times, after 10, 20
// and 40 ms.
var rules = map[string]string{
	"sqlserver": "{1205,3960:3,10ms*2}",
	"mysql":     "{1213:3,10ms*2}",
	"pgx":       "{40P01,40001:3,10ms*2}",
}

// bank is the code under test: accounts (id, balance) and a journal
// (note), in tables whose names start with prefix.
type bank struct {
	db                *sql.DB
	accounts, journal string
	debit, credit     string // the transfer's two statements
	note, read        string
}

func newBank(db *sql.DB, driverName, prefix string) *bank {
	p := func(i int) string { return "?" }
	switch driverName {
	case "pgx":
		p = func(i int) string { return "$" + strconv.Itoa(i) }
	case "sqlserver":
		p = func(i int) string { return "@p" + strconv.Itoa(i) }
	}
	b := &bank{db: db, accounts: prefix + "_accounts", journal: prefix + "_journal"}
	b.debit = "UPDATE " + b.accounts + " SET balance = balance - " + p(1) + " WHERE id = " + p(2)
	b.credit = "UPDATE " + b.accounts + " SET balance = balance + " + p(1) + " WHERE id = " + p(2)
	b.note = "INSERT INTO " + b.journal + " (note) VALUES (" + p(1) + ")"
	b.read = "SELECT balance FROM " + b.accounts + " WHERE id = " + p(1)
	return b
}

// create creates the tables, with accounts 1, 2, … holding balances.
func (b *bank) create(ctx context.Context, balances ...int64) error {
	for _, q := range []string{
		"CREATE TABLE " + b.accounts + " (id INT PRIMARY KEY, balance BIGINT NOT NULL)",
		"CREATE TABLE " + b.journal + " (note VARCHAR(100) NOT NULL)",
	} {
		if _, err := b.db.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	for i, n := range balances {
		if _, err := b.db.ExecContext(ctx, "INSERT INTO "+b.accounts+" (id, balance) VALUES ("+strconv.Itoa(i+1)+", "+strconv.FormatInt(n, 10)+")"); err != nil {
			return err
		}
	}
	return nil
}

// drop drops the tables.
func (b *bank) drop(ctx context.Context) error {
	_, err := b.db.ExecContext(ctx, "DROP TABLE "+b.accounts)
	_, jerr := b.db.ExecContext(ctx, "DROP TABLE "+b.journal)
	return errors.Join(err, jerr)
}

// errNoSuchAccount is the error of a transfer that names an account that
// does not exist.
var errNoSuchAccount = errors.New("bank: no such account")

// transfer moves amount from one account to another, in one transaction:
// both or neither.
func (b *bank) transfer(ctx context.Context, from, to int, amount int64) error {
	return crl.RunInTx(ctx, b.db, nil, func(tx *sql.Tx) error {
		for _, st := range []struct {
			q  string
			id int
			n  int64
		}{{b.debit, from, amount}, {b.credit, to, amount}} {
			res, err := tx.ExecContext(ctx, st.q, st.n, st.id)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n != 1 {
				return errors.Join(err, fmt.Errorf("%w: %d", errNoSuchAccount, st.id))
			}
		}
		return nil
	})
}

// record writes a journal entry, on its own (autocommit).
func (b *bank) record(ctx context.Context, note string) error {
	_, err := b.db.ExecContext(ctx, b.note, note)
	return err
}

// balance reads an account's balance.
func (b *bank) balance(ctx context.Context, id int) (int64, error) {
	var n int64
	err := b.db.QueryRowContext(ctx, b.read, id).Scan(&n)
	return n, err
}

// entries counts the journal's entries.
func (b *bank) entries(ctx context.Context) (int, error) {
	var n int
	err := b.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+b.journal).Scan(&n)
	return n, err
}
