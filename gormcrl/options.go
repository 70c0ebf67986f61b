package gormcrl

import "github.com/crl-go/crl/config"

// Option sets one retry setting in code; code wins over the DSN and the
// properties file. Option is config.Option: besides WithRetryExec and
// WithRetryConn here, every setting has its option in the config package
// (config.WithQueryTimeout, config.WithConnectRetryCount,
// config.WithObserver, config.WithRetryBudget, config.WithCircuitBreaker,
// config.WithExecutionCutoff, …), written once for both adapters.
type Option = config.Option

// WithRetryExec sets the statement rules (a retryExec value such as
// {1205,1222:3,2*2:select,update}). The rules also drive the whole-unit
// retry of Create, Update and Delete and the whole-transaction retry of
// Transaction; the query filter is checked against the statement that
// failed (INSERT, UPDATE, DELETE, … or COMMIT).
func WithRetryExec(rules string) Option { return config.WithRetryExec(rules) }

// WithRetryConn sets the connection rules (a retryConn value such as {+4060}).
func WithRetryConn(rules string) Option { return config.WithRetryConn(rules) }
