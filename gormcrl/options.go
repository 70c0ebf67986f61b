package gormcrl

import (
	"time"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

// Option sets one retry setting in code; code wins over the DSN and the
// properties file. Every config.Option is an Option.
type Option = config.Option

// WithRetryExec sets the statement rules (a retryExec value such as
// {1205,1222:3,2*2:select,update}). The rules also drive the whole-unit
// retry of Create, Update and Delete and the whole-transaction retry of
// Transaction; the query filter is checked against the statement that
// failed (INSERT, UPDATE, DELETE, … or COMMIT).
func WithRetryExec(rules string) Option { return config.WithRetryExec(rules) }

// WithRetryConn sets the connection rules (a retryConn value such as {+4060}).
func WithRetryConn(rules string) Option { return config.WithRetryConn(rules) }

// WithConnectRetryCount sets connectRetryCount (0..255; 0 turns connection
// retries off, as in JDBC).
func WithConnectRetryCount(n int) Option { return config.WithConnectRetryCount(n) }

// WithConnectRetryInterval sets connectRetryInterval (1 s..60 s).
func WithConnectRetryInterval(d time.Duration) Option { return config.WithConnectRetryInterval(d) }

// WithLoginTimeout sets loginTimeout, the bound of the connection loop.
func WithLoginTimeout(d time.Duration) Option { return config.WithLoginTimeout(d) }

// WithQueryTimeout sets queryTimeout: it bounds each statement attempt and
// refuses retries whose wait is longer.
func WithQueryTimeout(d time.Duration) Option { return config.WithQueryTimeout(d) }

// WithPropertiesFile names the mssql-jdbc.properties file to read and
// hot-reload.
func WithPropertiesFile(path string) Option { return config.WithPropertiesFile(path) }

// WithObserver sends the retry events to o (see the hooks package).
func WithObserver(o core.Observer) Option { return config.WithObserver(o) }

// WithClock replaces the clock, for tests.
func WithClock(c core.Clock) Option { return config.WithClock(c) }

// WithRetryBudget sets the retry budget of this database handle.
func WithRetryBudget(s core.BudgetSettings) Option { return config.WithRetryBudget(s) }

// WithoutRetryBudget turns the retry budget off.
func WithoutRetryBudget() Option { return config.WithoutRetryBudget() }

// WithCircuitBreaker turns the circuit breaker on (see core.Breaker).
func WithCircuitBreaker(s core.BreakerSettings) Option { return config.WithCircuitBreaker(s) }

// WithExecutionCutoff makes every new connection tell the server to stop a
// statement that runs longer than d (see config.Config.ExecutionCutoff).
func WithExecutionCutoff(d time.Duration) Option { return config.WithExecutionCutoff(d) }
