// Command sqlc is a small authors service on SQL Server whose data access
// sqlc generated (package db, from query.sql and schema.sql), written as
// an sqlc user writes it: a *sql.DB for the generated Queries, and a
// transaction helper that runs Queries over q.WithTx(tx).
//
// It adopted crl by changing two places and nothing else (README.md shows
// the diff): the line that opens the pool (sql.Open → crl.Open) and the
// body of the transaction helper (crl.RunInTx). The retry rules sit in
// the DSN, as a Java team's sit in its JDBC URL. Run against the built-in
// SQL Server stand-in (mssqltest), which answers the first INSERT with a
// deadlock:
//
//	go run ./examples/sqlc
package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log"
	"os"

	_ "github.com/microsoft/go-mssqldb" // registers mssql, whose ? parameters sqlc's mysql engine writes

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/examples/sqlc/db"
	"github.com/crl-go/crl/mssqltest"
)

// Store is the service's data access.
type Store struct {
	db *sql.DB
	q  *db.Queries
}

// Open opens the store's pool on SQL Server; it does not connect.
func Open(dsn string) (*Store, error) {
	pool, err := crl.Open("mssql", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open: %w", err)
	}
	return &Store{db: pool, q: db.New(pool)}, nil
}

// Close closes the pool.
func (s *Store) Close() error { return s.db.Close() }

// Author returns the author id.
func (s *Store) Author(ctx context.Context, id int64) (db.Author, error) {
	a, err := s.q.GetAuthor(ctx, id)
	if err != nil {
		return db.Author{}, fmt.Errorf("store: author %d: %w", id, err)
	}
	return a, nil
}

// Authors lists the authors by name.
func (s *Store) Authors(ctx context.Context) ([]db.Author, error) {
	list, err := s.q.ListAuthors(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: authors: %w", err)
	}
	return list, nil
}

// AddAuthor adds an author, in one autocommit INSERT.
func (s *Store) AddAuthor(ctx context.Context, name, bio string) error {
	res, err := s.q.CreateAuthor(ctx, db.CreateAuthorParams{Name: name, Bio: sql.NullString{String: bio, Valid: bio != ""}})
	if err != nil {
		return fmt.Errorf("store: add author %q: %w", name, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("store: add author %q: %d rows added (error %v), expected 1", name, n, err)
	}
	return nil
}

// ReplaceAuthor removes the author id and adds name in its place, all or
// nothing.
func (s *Store) ReplaceAuthor(ctx context.Context, id int64, name, bio string) error {
	err := s.execTx(ctx, func(q *db.Queries) error {
		if err := q.DeleteAuthor(ctx, id); err != nil {
			return err
		}
		_, err := q.CreateAuthor(ctx, db.CreateAuthorParams{Name: name, Bio: sql.NullString{String: bio, Valid: bio != ""}})
		return err
	})
	if err != nil {
		return fmt.Errorf("store: replace author %d by %q: %w", id, name, err)
	}
	return nil
}

// execTx runs fn with Queries over a transaction, and commits it when fn
// returns nil.
func (s *Store) execTx(ctx context.Context, fn func(*db.Queries) error) error {
	return crl.RunInTx(ctx, s.db, nil, func(tx *sql.Tx) error {
		return fn(s.q.WithTx(tx))
	})
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run starts the stand-in, scripts a deadlock of the first INSERT and of
// the DELETE in a transaction, and runs the service's functions.
func run(ctx context.Context, w io.Writer) error {
	srv, err := mssqltest.Start()
	if err != nil {
		return fmt.Errorf("sqlc example: %w", err)
	}
	defer srv.Close()
	srv.Handle(db.Sent("CreateAuthor"), mssqltest.Error(1205), mssqltest.Affected(1))
	srv.Handle(db.Sent("DeleteAuthor"), mssqltest.Error(1205), mssqltest.Affected(1))
	srv.Handle(db.Sent("GetAuthor"), mssqltest.Rows([]string{"id", "name", "bio"}, []any{int64(2), "Grace", "compilers"}))

	s, err := Open(srv.DSN() + "&retryExec={1205:3,10ms*2}")
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.AddAuthor(ctx, "Ada", "engines"); err != nil {
		return err
	}
	fmt.Fprintf(w, "added Ada: the INSERT ran %d times\n", srv.Count(db.Sent("CreateAuthor")))
	if err := s.ReplaceAuthor(ctx, 1, "Grace", "compilers"); err != nil {
		return err
	}
	fmt.Fprintf(w, "replaced author 1: %d transaction committed, %d rolled back\n", srv.Commits(), srv.Rollbacks())
	a, err := s.Author(ctx, 2)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "author 2: %s (%s)\n", a.Name, a.Bio.String)
	return nil
}
