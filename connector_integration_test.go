package crl_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/conformance"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/sqlxcrl"
)

// A go-sql-driver/mysql registered under a name the family table does not
// know (as a tracing wrapper registers it), with
// config.WithDriverFamily("mariadb"), gets the MariaDB family everywhere:
// the execution cut-off is set on its connections (not refused as family
// "other"), and a COMMIT stalled on the wire returns by its transaction's
// deadline with an error (not a success after the stall), through
// sqlxcrl.Open (a DSN) and sqlxcrl.OpenDB (a connector).
func TestWrappedDriverNameKeepsTheFamilyItIsGiven(t *testing.T) {
	if testing.Short() {
		t.Skip("stalls real connections")
	}
	db := conformance.DatabaseNamed(t, "mariadb")
	name := fmt.Sprintf("mysql-wrapped-%d", rand.Int64())
	sql.Register(name, &mysqldriver.MySQLDriver{})

	raw, err := sql.Open("mysql", db.DSN)
	require.NoError(t, err)
	t.Cleanup(func() { raw.Close() })
	table := fmt.Sprintf("wrappedfam_%d", rand.Uint32())
	_, err = raw.Exec("CREATE TABLE " + table + " (id INT PRIMARY KEY)")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = raw.Exec("DROP TABLE IF EXISTS " + table) })

	for i, via := range []string{"sqlxcrl.Open", "sqlxcrl.OpenDB"} {
		t.Run(via, func(t *testing.T) {
			_, target := viaProxy(t, db, "")
			proxy := newStallProxy(t, target)
			dsn, _ := viaProxy(t, db, proxy.Addr())
			opts := []config.Option{config.WithDriverFamily("mariadb"), config.WithExecutionCutoff(300 * time.Millisecond), config.WithPropertiesFile("")}
			var h *sqlxcrl.DB
			if via == "sqlxcrl.Open" {
				h, err = sqlxcrl.Open(name, dsn, opts...)
			} else {
				cfg, perr := mysqldriver.ParseDSN(dsn)
				require.NoError(t, perr)
				c, cerr := mysqldriver.NewConnector(cfg)
				require.NoError(t, cerr)
				h, err = sqlxcrl.OpenDB(c, name, opts...)
			}
			require.NoError(t, err, "the cut-off is not refused for the family the option names")
			t.Cleanup(func() { h.Close() })
			assert.Equal(t, "mysql", h.Runtime().DriverFamily())

			// The cut-off is set on the connection, and the server applies it.
			var cutoff float64
			require.NoError(t, h.Get(&cutoff, "SELECT @@max_statement_time"))
			assert.Equal(t, 0.3, cutoff)
			var n int64
			err := h.Get(&n, "SELECT count(*) FROM seq_1_to_20000 a, seq_1_to_20000 b WHERE a.seq + b.seq = 7")
			require.Error(t, err)
			number, ok := core.ErrorNumber(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, int32(1969), number, "MariaDB's max_statement_time cut the statement off")

			// A stalled COMMIT ends at the transaction's deadline.
			ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
			defer cancel()
			start := time.Now()
			err = h.RunInTx(ctx, nil, func(tx *sqlxcrl.Tx) error {
				if _, err := tx.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s (id) VALUES (%d)", table, i)); err != nil {
					return err
				}
				proxy.Stall()
				return nil
			})
			elapsed := time.Since(start)
			assert.Less(t, elapsed, 1700*time.Millisecond, "the COMMIT returned %v after it began, 1.2 s deadline", elapsed)
			require.Error(t, err, "a COMMIT whose answer never came is no success")
			assert.ErrorIs(t, err, core.ErrCommitUnknown, "%v", err)
		})
	}
}
