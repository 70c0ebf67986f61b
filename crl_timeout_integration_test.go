package crl_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
)

// pgx closes its connection when queryTimeout cuts a statement off, and
// answers the next statement on it with driver.ErrBadConn (not sent). The
// time-out rule's retry then runs on a new connection, in the same loop:
// two executions in all, never database/sql running the whole loop again.
func TestTimedOutAttemptRetriedOnANewPgxConnection(t *testing.T) {
	dsn := os.Getenv("CRL_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("CRL_POSTGRES_DSN not set")
	}
	admin, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	defer admin.Close()
	for _, kind := range []string{"Exec", "QueryRow"} {
		t.Run(kind, func(t *testing.T) {
			seq := fmt.Sprintf("crl_to_%d_%d", time.Now().UnixNano()%1e9, rand.IntN(1000))
			_, err := admin.Exec("CREATE SEQUENCE " + seq)
			require.NoError(t, err)
			defer admin.Exec("DROP SEQUENCE " + seq) //nolint:errcheck // best effort
			db, err := crl.Open("pgx", dsn, crl.WithRetryExec("{timeout:2,10ms*1}"),
				config.WithQueryTimeout(300*time.Millisecond))
			require.NoError(t, err)
			defer db.Close()
			db.SetMaxOpenConns(1)
			require.NoError(t, db.Ping())
			q := "SELECT pg_sleep(CASE WHEN nextval('" + seq + "') = 1 THEN 3 ELSE 0 END)::text"
			if kind == "Exec" {
				_, err = db.ExecContext(context.Background(), q)
			} else {
				var s string
				err = db.QueryRowContext(context.Background(), q).Scan(&s)
			}
			require.NoError(t, err)
			var n int64
			require.NoError(t, admin.QueryRow("SELECT last_value FROM "+seq).Scan(&n))
			assert.Equal(t, int64(2), n, "executions")
		})
	}
}
