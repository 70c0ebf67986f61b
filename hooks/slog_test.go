package hooks_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl"
	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/hooks"
	"github.com/crl-go/crl/mssqltest"
)

// slogLines returns the records a JSON handler wrote to buf: their
// message, kind and, when present, unit_attempt (0 when absent).
func slogLines(t *testing.T, buf *bytes.Buffer) []string {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec struct {
			Msg         string `json:"msg"`
			Kind        string `json:"kind"`
			UnitAttempt int    `json:"unit_attempt"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &rec), l)
		lines = append(lines, rec.Msg+" "+rec.Kind+" "+strconv.Itoa(rec.UnitAttempt))
	}
	return lines
}

// The lines of a unit crl re-runs, and of the operations run inside one
// of its runs, carry unit_attempt: crl.RunInTx's retry after run 1 and
// its success in run 2, and the retried login of the connection run 2
// opened (the transaction's context reaches the connection loop); a
// statement retried on its own, in no unit, carries none.
func TestSlogUnitAttempt(t *testing.T) {
	const update = "UPDATE accounts SET balance = balance - 10 WHERE id = 1"
	srv := mssqltest.NewServer(t)
	var buf bytes.Buffer
	db, err := crl.Open("sqlserver", srv.DSN()+"&retryExec={1205:3,1}&txReplay=off",
		config.WithClock(coretest.NewClock(time.Time{})), config.WithObserver(hooks.Slog(slog.New(slog.NewJSONHandler(&buf, nil)))))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, db.Close()) })
	db.SetMaxIdleConns(0) // each run opens its connection with the run's context

	srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
	runs := 0
	require.NoError(t, crl.RunInTx(context.Background(), db, nil, func(tx *sql.Tx) error {
		if runs++; runs == 1 {
			srv.FailLogin(40613, 1) // the next login, run 2's, fails once
		}
		_, err := tx.Exec(update)
		return err
	}))
	require.Equal(t, 2, runs)
	assert.Equal(t, []string{
		"crl: retry scheduled transaction 1",
		"crl: retry scheduled connection 2",
		"crl: succeeded after retries connection 2",
		"crl: succeeded after retries transaction 2",
	}, slogLines(t, &buf))

	buf.Reset()
	srv.Handle(update, mssqltest.Error(1205), mssqltest.Affected(1))
	_, err = db.Exec(update)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"crl: retry scheduled statement 0",
		"crl: succeeded after retries statement 0",
	}, slogLines(t, &buf))
}
