package crl_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/crltest"
	"github.com/crl-go/crl/mssqltest"
)

// The README's Use for SQL Server: the driver's name and a DSN whose rule
// names its errors by meaning (mssqltest stands in for the server). The
// deadlock victim runs again.
func ExampleOpen() {
	srv, err := mssqltest.Start()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	const update = "UPDATE stock SET n = n - 1 WHERE id = 7"
	srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))

	db, err := crl.Open("sqlserver", srv.DSN()+"&retryExec={deadlock,lockTimeout:3,100ms*2}")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	_, err = db.Exec(update)
	fmt.Println(err, srv.Count(update))
	// Output: <nil> 2
}

// The README's Use for MySQL/MariaDB and PostgreSQL, against the local
// servers: the same rule by meaning in each DSN, each family's deadlock
// retried (an injected one: crltest gives the driver's own error value).
func TestREADMEUseOnEachFamily(t *testing.T) {
	for _, tc := range []struct{ env, driver, family, rule string }{
		{"CRL_MYSQL_DSN", "mysql", "mysql", "{deadlock,lockTimeout:3,100ms*2}"},
		{"CRL_POSTGRES_DSN", "pgx", "postgres", "{deadlock,serialization:3,100ms*2}"},
	} {
		t.Run(tc.family, func(t *testing.T) {
			dsn := os.Getenv(tc.env)
			if dsn == "" {
				t.Skipf("%s not set", tc.env)
			}
			sep := "?"
			if strings.Contains(dsn, "?") {
				sep = "&"
			}
			db, err := crl.Open(tc.driver, dsn+sep+"retryExec="+tc.rule)
			require.NoError(t, err)
			defer db.Close()
			rt, ok := crl.RuntimeOf(db)
			require.True(t, ok)
			assert.Equal(t, tc.rule, rt.Config().RetryExec)
			crltest.Inject(db, crltest.Fault{Err: crltest.Deadlock(tc.family), Times: 1, T: t})
			var one int
			require.NoError(t, db.QueryRow("SELECT 1").Scan(&one))
			assert.Equal(t, 1, one)
		})
	}
}
