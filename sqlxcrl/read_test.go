package sqlxcrl_test

import (
	"context"
	"testing"

	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/mssqltest"
)

// A whole read (Get, Select) and a plain statement under crl.WithoutRetry
// run once, and the caller gets the driver's error value itself; the same
// read with another context is retried.
func TestReadWithoutRetry(t *testing.T) {
	const q = "SELECT balance FROM accounts WHERE id = 1"
	srv := mssqltest.NewServer(t)
	db, clock := open(t, srv, "&retryExec={1205:3,1}")
	ctx := crl.WithoutRetry(context.Background())
	rows := mssqltest.Rows([]string{"balance"}, []any{int64(90)})
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"Get", func(ctx context.Context) error { var b int64; return db.GetContext(ctx, &b, q) }},
		{"Select", func(ctx context.Context) error { var b []int64; return db.SelectContext(ctx, &b, q) }},
		{"Exec", func(ctx context.Context) error { _, err := db.ExecContext(ctx, q); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.Reset()
			srv.Handle(q, mssqltest.Error(1205), rows)
			err := tc.run(ctx)
			me, ok := err.(mssql.Error)
			require.True(t, ok, "the driver's own value, got %T: %v", err, err)
			assert.Equal(t, int32(1205), me.Number)
			assert.Equal(t, 1, srv.Count(q), "executions")
			assert.Empty(t, clock.Sleeps(), "waits")

			srv.Handle(q, mssqltest.Error(1205), rows)
			require.NoError(t, tc.run(context.Background()))
			assert.Equal(t, 3, srv.Count(q), "executions")
			clock.Reset()
		})
	}
}
