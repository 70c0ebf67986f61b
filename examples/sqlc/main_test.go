package main

import (
	"bytes"
	"context"
	"errors"
	"testing"

	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/examples/sqlc/db"
	"github.com/crl-go/crl/mssqltest"
)

var (
	getAuthor    = db.Sent("GetAuthor")
	createAuthor = db.Sent("CreateAuthor")
	deleteAuthor = db.Sent("DeleteAuthor")
)

func isDeadlock(err error) bool {
	var e mssql.Error
	return errors.As(err, &e) && e.Number == 1205
}

// A deadlock (1205) in each of the service's own functions — an
// autocommit write, a transaction, a read — with the rule
// {1205:1,10ms} (one retry: a call that succeeds after the deadlock was
// retried exactly once) and the statements on the server right; and,
// under a rule without 1205, the same calls fail with the server's
// error, as before the adoption.
func TestDeadlockInTheServicesOwnFunctions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rules   string
		retried bool
	}{
		{"retried once under retryExec={1205:1,10ms}", "{1205:1,10ms}", true},
		{"not retried without a rule for 1205", "{1222:1,10ms}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mssqltest.NewServer(t)
			s, err := Open(srv.DSN() + "&retryExec=" + tc.rules)
			require.NoError(t, err)
			defer s.Close()
			ctx := context.Background()

			t.Run("autocommit write", func(t *testing.T) {
				srv.Reset()
				srv.Handle(createAuthor, mssqltest.Error(1205), mssqltest.Affected(1))
				err := s.AddAuthor(ctx, "Ada", "engines")
				if !tc.retried {
					assert.True(t, isDeadlock(err), "err = %v, want the server's 1205", err)
					assert.Equal(t, 1, srv.Count(createAuthor))
					return
				}
				require.NoError(t, err)
				assert.Equal(t, 2, srv.Count(createAuthor), "the deadlocked INSERT and its one retry")
			})

			t.Run("transaction", func(t *testing.T) {
				srv.Reset()
				srv.Handle(deleteAuthor, mssqltest.Affected(1))
				srv.Handle(createAuthor, mssqltest.Error(1205), mssqltest.Affected(1))
				err := s.ReplaceAuthor(ctx, 1, "Grace", "compilers")
				victim := []string{deleteAuthor, createAuthor}
				assert.Equal(t, [][]string{victim}, srv.RolledBack(), "the deadlock victim's transaction")
				if !tc.retried {
					assert.True(t, isDeadlock(err), "err = %v, want the server's 1205", err)
					assert.Empty(t, srv.Committed(), "nothing committed")
					return
				}
				require.NoError(t, err)
				assert.Equal(t, [][]string{{deleteAuthor, createAuthor}}, srv.Committed(),
					"the transaction re-run whole and committed once: no statement retried alone, none twice")
			})

			t.Run("read", func(t *testing.T) {
				srv.Reset()
				srv.Handle(getAuthor, mssqltest.Error(1205),
					mssqltest.Rows([]string{"id", "name", "bio"}, []any{int64(2), "Grace", "compilers"}))
				a, err := s.Author(ctx, 2)
				if !tc.retried {
					assert.True(t, isDeadlock(err), "err = %v, want the server's 1205", err)
					return
				}
				require.NoError(t, err)
				assert.Equal(t, "Grace", a.Name)
				assert.Equal(t, 2, srv.Count(getAuthor))
			})
		})
	}
}

// The program runs as before the adoption, its output what the stand-in
// scripted.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out))
	assert.Equal(t, "added Ada: the INSERT ran 2 times\n"+
		"replaced author 1: 1 transaction committed, 1 rolled back\n"+
		"author 2: Grace (compilers)\n", out.String())
}
