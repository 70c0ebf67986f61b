package crl

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/tables/family"
)

// attemptLog records the statement loop's events.
type attemptLog struct {
	core.NopObserver
	mu      sync.Mutex
	retries []core.RetryScheduled
	gaveUp  []core.GaveUp
}

func (l *attemptLog) RetryScheduled(e core.RetryScheduled) {
	l.mu.Lock()
	l.retries = append(l.retries, e)
	l.mu.Unlock()
}

func (l *attemptLog) GaveUp(e core.GaveUp) {
	l.mu.Lock()
	l.gaveUp = append(l.gaveUp, e)
	l.mu.Unlock()
}

// TestTimedOutAttemptRetriedOnANewConnection: go-sql-driver/mysql closes
// its connection when a running statement's context ends, so an attempt
// that queryTimeout cut off leaves the statement's connection unusable
// (its IsValid says so). The retries the time-out rule asks for run on a
// new connection, each reaching the server, in one statement loop: not on
// the closed connection, whose driver.ErrBadConn the rule does not retry
// and database/sql answers by running the whole loop again.
func TestTimedOutAttemptRetriedOnANewConnection(t *testing.T) {
	for _, c := range []struct {
		name, env, sleep string
		connector        func(t *testing.T, dsn string) driver.Connector
	}{
		{"mysql", "CRL_MYSQL_DSN", "DO SLEEP(2)", func(t *testing.T, dsn string) driver.Connector {
			cfg, err := mysql.ParseDSN(dsn)
			require.NoError(t, err)
			conn, err := mysql.NewConnector(cfg)
			require.NoError(t, err)
			return conn
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dsn := os.Getenv(c.env)
			if dsn == "" {
				t.Skip(c.env + " is not set")
			}
			rules, err := core.ParseStatementRules("{timeout:2,10ms+0}")
			require.NoError(t, err)
			log := &attemptLog{}
			r, err := core.NewRetrier(core.Policy{Statement: rules, QueryTimeout: 200 * time.Millisecond}, core.Options{Observer: log})
			require.NoError(t, err)
			conn, err := wrapConnector(c.connector(t, dsn), poolSettings{Retrier: r, Family: family.Of(c.name)})
			require.NoError(t, err)
			db := sql.OpenDB(conn)
			defer db.Close()

			_, err = db.ExecContext(context.Background(), c.sleep)
			require.Error(t, err)
			assert.ErrorIs(t, err, context.DeadlineExceeded, "the last attempt's time-out")
			assert.NotErrorIs(t, err, driver.ErrBadConn)
			log.mu.Lock()
			defer log.mu.Unlock()
			require.Len(t, log.gaveUp, 1, "one statement loop")
			assert.Equal(t, 3, log.gaveUp[0].Attempts, "the first attempt and the rule's 2 retries")
			assert.ErrorIs(t, log.gaveUp[0].Reason, core.ErrRetriesExhausted)
			require.Len(t, log.retries, 2)
			for _, e := range log.retries {
				assert.ErrorIs(t, e.Err, context.DeadlineExceeded, "attempt %d", e.Attempt)
			}
		})
	}
}
