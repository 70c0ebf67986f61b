package sqlxcrl_test

import (
	"context"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

// BenchmarkExecContext compares ExecContext through sqlxcrl with plain sqlx
// on the success path, side by side against the same stand-in server, so
// the ratio of the two ns/op (and the difference in allocs/op) is the cost
// of the retry layer.
func BenchmarkExecContext(b *testing.B) {
	srv := mssqltest.NewServer(b)
	const q = "UPDATE accounts SET balance = balance + 1 WHERE id = 1"
	srv.Handle(q, mssqltest.Affected(1))
	ctx := context.Background()

	plain, err := sqlx.Connect("sqlserver", srv.DSN())
	if err != nil {
		b.Fatal(err)
	}
	defer plain.Close()
	crl, err := sqlxcrl.Connect("sqlserver", srv.DSN()+"&retryExec={1205,1222:3,2*2:select,update}")
	if err != nil {
		b.Fatal(err)
	}
	defer crl.Close()

	for _, bc := range []struct {
		name string
		exec func() error
	}{
		{"sqlx", func() error { _, err := plain.ExecContext(ctx, q); return err }},
		{"sqlxcrl", func() error { _, err := crl.ExecContext(ctx, q); return err }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if err := bc.exec(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
