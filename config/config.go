package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/crl-go/crl/core"
)

// DefaultRetryRefresh is how often the properties file is looked at when
// retryRefresh is not set.
const DefaultRetryRefresh = 30 * time.Second

// DefaultRetryExec is the statement rule of a handle for which no source
// (code, DSN, properties file) sets retryExec: deadlock victims and
// serialization failures, the errors whose statement the server always
// rolled back, retried 3 times after 100 ms, 200 ms and 400 ms, with full
// jitter unless retryJitter is set. retryExec= (empty) means no rules, as
// in the JDBC driver, whose default is none.
const DefaultRetryExec = "{deadlock,serialization:3,100ms*2}"

// defaultRules is DefaultRetryExec compiled; TestDefaultRetryExecParses
// holds it to parse.
var defaultRules, _ = core.ParseStatementRules(DefaultRetryExec)

// Config holds the settings of one database handle. The zero value means
// the JDBC defaults but one: the statement rule DefaultRetryExec with full
// jitter where the JDBC driver has none; the builtin connection list,
// connectRetryCount 1, connectRetryInterval 10 s, loginTimeout 30 s, no
// queryTimeout, the default retry budget, no jitter.
//
// A field is "set" when it is not zero, or when an Option, a DSN parameter
// or a properties line gave it a value (even a zero one); an unset field
// takes its value from the next source in the order code > DSN > file >
// defaults. The fields take the values of core.Policy, so "off" is never
// the ambiguous zero.
type Config struct {
	// RetryExec is the retryExec rules, as written. "" is not set
	// (DefaultRetryExec unless a lower source has rules); "{}", or ""
	// given by an option, a DSN (retryExec=) or a properties line, is
	// explicitly no rules.
	// A reader or an option that sets it keeps the rules it compiled
	// beside it, for Policy.
	RetryExec string
	// RetryConn is the retryConn rules, as written. "" is not set (the
	// builtin list unless a lower source has rules); "{}" is explicitly
	// the builtin list. Its compiled rules are kept as RetryExec's are.
	RetryConn string
	// ConnectRetryCount is connectRetryCount, 1..255 (see
	// core.Policy.ConnectRetryCount). Zero is not set: 1, or as in the JDBC
	// driver 2 for an Azure SQL server and 5 for a Synapse serverless
	// endpoint named by a SQL Server DSN; core.Disabled turns connection
	// retries off.
	ConnectRetryCount int
	// ConnectRetryInterval is the wait between connection retries after the
	// first, 1 s..60 s. Zero is not set (10 s).
	ConnectRetryInterval time.Duration
	// LoginTimeout bounds the connection loop. Zero is not set (30 s).
	LoginTimeout time.Duration
	// QueryTimeout bounds each statement attempt and refuses longer waits.
	// Zero is not set (no bound); core.JDBCQueryTimeoutZero is JDBC's
	// queryTimeout=0.
	QueryTimeout time.Duration
	// PropertiesPath is the properties file. "" is not set: the
	// CRL_PROPERTIES environment variable, else, for a SQL Server handle
	// only, mssql-jdbc.properties in the working directory, else next to
	// the executable, else no file.
	PropertiesPath string
	// RetryRefresh is how often the properties file is looked at. Zero is
	// not set (30 s); a negative value reads the file once, at start.
	RetryRefresh time.Duration
	// Budget is the retry budget's settings. The zero value is the default
	// budget (core.BudgetSettings).
	Budget core.BudgetSettings
	// NoBudget turns the retry budget off.
	NoBudget bool
	// Breaker is the circuit breaker's settings. The zero value is off.
	Breaker core.BreakerSettings
	// ExecutionCutoff tells the server to stop a statement that runs
	// longer, on every new connection (MySQL/MariaDB max_execution_time /
	// max_statement_time, PostgreSQL statement_timeout), so that a
	// client-side timeout and its retry do not leave the first execution
	// running on the server. Zero is off; CutoffQueryTimeout means "the
	// queryTimeout". SQL Server needs none: the driver's cancellation
	// (ATTENTION) stops the statement on the server.
	ExecutionCutoff time.Duration
	// Jitter randomises statement waits. Zero: none (the JDBC schedule),
	// except under DefaultRetryExec, whose waits are fully jittered unless
	// retryJitter is set.
	Jitter core.Jitter
	// NoTxReplay turns transaction replay off (txReplay=off): a
	// transaction's statements are not recorded, and one that failed is
	// retried only by a helper that re-runs it (crl.RunInTx, crl.Retry,
	// …). The zero value is on.
	NoTxReplay bool
	// TxReplayLimit is how many statements a transaction records for its
	// replay; a longer one is not replayed. Zero means 1000.
	TxReplayLimit int
	// Clock is the time source of the loops and of the refresh. Nil means
	// the real clock. Only code sets it.
	Clock core.Clock
	// Observer receives the loops' events and the reload events. Nil means
	// none. Only code sets it.
	Observer core.Observer
	// DriverFamily names the database family of a driver whose registered
	// name does not say it (a driver wrapped for tracing, such as
	// "sqlserver-otel"): "sqlserver", "mysql" (MariaDB too) or "postgres".
	// The DSN is then read in that family's forms, crl's keys removed from
	// it, the properties file looked for as for that family, and the
	// execution cut-off set as for it. "" is the family of the driver's
	// name. Only code sets it (WithDriverFamily).
	DriverFamily string

	set  uint16                          // bit i: settings[i] was given a value by an Option, a DSN or a file, even a zero one
	exec *compiled[core.StatementRules]  // RetryExec as compiled by whoever set it; nil for a literal
	conn *compiled[core.ConnectionRules] // RetryConn as compiled by whoever set it; nil for a literal
}

// CutoffQueryTimeout, as Config.ExecutionCutoff, means the cut-off is the
// queryTimeout (executionCutoff=on).
const CutoffQueryTimeout time.Duration = -1

// Policy returns the core.Policy of c, unset fields taking the JDBC
// defaults, or an error naming the first field out of its range (and for
// a rule, the offending token). Its rules are those compiled when the DSN,
// the properties file or an option set them; only rules set in a Config
// literal are compiled here.
func (c Config) Policy() (core.Policy, error) {
	if err := c.validate(""); err != nil {
		return core.Policy{}, err
	}
	stmt, err := c.exec.of(c.RetryExec, core.ParseStatementRules)
	if err != nil {
		return core.Policy{}, &ValueError{Key: keyRetryExec, Value: c.RetryExec, Reason: err.Error(), Err: err}
	}
	conn, err := c.conn.of(c.RetryConn, core.ParseConnectionRules)
	if err != nil {
		return core.Policy{}, &ValueError{Key: keyRetryConn, Value: c.RetryConn, Reason: err.Error(), Err: err}
	}
	jitter := c.Jitter
	if c.UsesDefaultRule() {
		stmt = defaultRules
		if !c.hasKey(keyRetryJitter) {
			jitter = core.JitterFull
		}
	}
	return core.Policy{
		Statement:            stmt,
		Connection:           conn,
		QueryTimeout:         c.QueryTimeout,
		ConnectRetryCount:    c.ConnectRetryCount,
		ConnectRetryInterval: c.ConnectRetryInterval,
		LoginTimeout:         c.LoginTimeout,
		Jitter:               jitter,
	}, nil
}

// UsesDefaultRule reports whether no source sets retryExec, so that the
// handle's statement rules are DefaultRetryExec.
func (c Config) UsesDefaultRule() bool { return !c.hasKey(keyRetryExec) }

// RefreshInterval returns how often the properties file is looked at:
// RetryRefresh, or DefaultRetryRefresh when it is zero; a negative value
// means the file is read only at start.
func (c Config) RefreshInterval() time.Duration {
	if c.RetryRefresh == 0 {
		return DefaultRetryRefresh
	}
	return c.RetryRefresh
}

// Option sets one setting in code; options take precedence over the DSN
// and the properties file. Options are applied in order, a later one
// replacing an earlier one for the same setting.
type Option func(*Config)

// option is the Option that sets the setting of key with set.
func option(key string, set func(*Config)) Option {
	return func(c *Config) {
		set(c)
		c.mark(key)
	}
}

// WithConfig sets every field that c sets (see Config), as if by the
// matching options.
func WithConfig(c Config) Option {
	return func(dst *Config) { *dst = c.over(*dst) }
}

// WithRetryExec sets the retryExec rules, such as "{1205,1222:3,2*2}" or
// "{deadlock,lockTimeout:3,100ms*2}". "" or "{}" means no statement is
// retried, whatever the DSN or the file say (without any retryExec, a
// handle runs DefaultRetryExec).
func WithRetryExec(rules string) Option {
	exec := compile(rules, core.ParseStatementRules)
	return option(keyRetryExec, func(c *Config) { c.RetryExec, c.exec = rules, exec })
}

// WithRetryConn sets the retryConn rules, such as "{+4060}" (added to the
// builtin list) or "{4060}" (replacing it). "" or "{}" means the builtin
// list, whatever the DSN or the file say.
func WithRetryConn(rules string) Option {
	conn := compile(rules, core.ParseConnectionRules)
	return option(keyRetryConn, func(c *Config) { c.RetryConn, c.conn = rules, conn })
}

// WithConnectRetryCount sets connectRetryCount, the extra connection
// attempts: 0 turns connection retries off (as in JDBC), 1..255 allow that
// many. core.Disabled is accepted as off too.
func WithConnectRetryCount(n int) Option {
	if n == 0 {
		n = core.Disabled
	}
	return option(keyConnectRetryCount, func(c *Config) { c.ConnectRetryCount = n })
}

// WithConnectRetryInterval sets connectRetryInterval, 1s..60s: the wait
// between connection retries after the first, which is immediate. Zero
// means the default, 10s.
func WithConnectRetryInterval(d time.Duration) Option {
	return option(keyConnectRetryInterval, func(c *Config) { c.ConnectRetryInterval = d })
}

// WithLoginTimeout sets loginTimeout, which bounds the whole connection
// loop, 0..65535s. Zero means the default, 30s.
func WithLoginTimeout(d time.Duration) Option {
	return option(keyLoginTimeout, func(c *Config) { c.LoginTimeout = d })
}

// WithQueryTimeout sets queryTimeout. A positive d bounds each statement
// attempt and refuses a retry whose wait is longer. Zero means no
// queryTimeout (JDBC's -1), whatever the DSN or the file say;
// core.JDBCQueryTimeoutZero is JDBC's queryTimeout=0 (no bound, but every
// retry with a wait is refused).
func WithQueryTimeout(d time.Duration) Option {
	return option(keyQueryTimeout, func(c *Config) { c.QueryTimeout = d })
}

// WithPropertiesFile names the properties file. A file named here must
// exist when New runs. "" means the usual lookup (CRL_PROPERTIES, then,
// for a SQL Server handle only, the working directory, then next to the
// executable).
func WithPropertiesFile(path string) Option {
	return option(keyRetryProperties, func(c *Config) { c.PropertiesPath = path })
}

// WithRetryRefresh sets how often the properties file is looked at (read,
// and its content compared with the content in effect). A changed content
// is applied at once when it ends with a line end, otherwise when the next
// look finds it unchanged (a write in progress never applies a prefix).
// Zero means the default, 30s; a negative d reads the file once, at start.
func WithRetryRefresh(d time.Duration) Option {
	return option(keyRetryRefresh, func(c *Config) { c.RetryRefresh = d })
}

// WithRetryBudget turns the retry budget on with settings s (the zero
// value is the default budget).
func WithRetryBudget(s core.BudgetSettings) Option {
	return option(keyRetryBudget, func(c *Config) { c.Budget, c.NoBudget = s, false })
}

// WithoutRetryBudget turns the retry budget off: every retry a rule allows
// runs.
func WithoutRetryBudget() Option {
	return option(keyRetryBudget, func(c *Config) { c.Budget, c.NoBudget = core.BudgetSettings{}, true })
}

// WithJitter sets how statement waits are randomised: core.JitterNone
// (exactly the JDBC schedule), core.JitterFull or core.JitterEqual.
func WithJitter(j core.Jitter) Option {
	return option(keyRetryJitter, func(c *Config) { c.Jitter = j })
}

// WithCircuitBreaker turns the circuit breaker on with settings s (the
// zero value turns it off): after s.Failures operations in a row end with
// retryable errors, operations fail at once with core.ErrCircuitOpen for
// s.OpenFor.
func WithCircuitBreaker(s core.BreakerSettings) Option {
	return option(keyRetryBreaker, func(c *Config) { c.Breaker = s })
}

// WithExecutionCutoff sets the server-side execution cut-off (see
// Config.ExecutionCutoff); zero turns it off, CutoffQueryTimeout uses the
// queryTimeout.
func WithExecutionCutoff(d time.Duration) Option {
	return option(keyExecutionCutoff, func(c *Config) { c.ExecutionCutoff = d })
}

// WithTxReplay turns transaction replay on (the default) or off (see
// Config.NoTxReplay); the txReplay key.
func WithTxReplay(on bool) Option {
	return option(keyTxReplay, func(c *Config) { c.NoTxReplay = !on })
}

// WithTxReplayLimit sets how many statements a transaction records for
// its replay (see Config.TxReplayLimit); zero: the default 1000; the
// txReplayLimit key.
func WithTxReplayLimit(n int) Option {
	return option(keyTxReplayLimit, func(c *Config) { c.TxReplayLimit = n })
}

// ReplayLimit returns the statement limit of a transaction's replay
// record in effect: zero when replay is off, else TxReplayLimit or its
// default, 1000.
func (c Config) ReplayLimit() int {
	switch {
	case c.NoTxReplay:
		return 0
	case c.TxReplayLimit <= 0:
		return defaultTxReplayLimit
	}
	return c.TxReplayLimit
}

// defaultTxReplayLimit is txReplayLimit's default.
const defaultTxReplayLimit = 1000

// Cutoff returns the execution cut-off in effect: ExecutionCutoff, the
// QueryTimeout for CutoffQueryTimeout, or zero when it is off.
func (c Config) Cutoff() time.Duration {
	if c.ExecutionCutoff == CutoffQueryTimeout {
		return max(c.QueryTimeout, 0)
	}
	return max(c.ExecutionCutoff, 0)
}

// WithClock sets the time source of the retry loops, of the budget and of
// the properties file's refresh (tests pass a coretest.Clock).
func WithClock(clock core.Clock) Option {
	return option(nameClock, func(c *Config) { c.Clock = clock })
}

// WithDriverFamily names the database family of a driver whose name does
// not say it (see Config.DriverFamily): "sqlserver", "mysql" or
// "postgres". Any other value is an error of the handle's Open naming it.
func WithDriverFamily(family string) Option {
	return option(nameDriverFamily, func(c *Config) { c.DriverFamily = family })
}

// WithObserver sets the receiver of the retry events and of the reload
// events of the properties file.
func WithObserver(o core.Observer) Option {
	return option(nameObserver, func(c *Config) { c.Observer = o })
}

// ParseOption reads value for the setting named key (a DSN key such as
// queryTimeout or retryExec, matched case-insensitively) exactly as the
// DSN and the properties file read it, and returns the Option that sets
// it, so that a command-line flag takes the values the DSN key takes. A
// value the key does not take is a *ValueError (ErrInvalidValue) naming
// it and saying what is expected; a key that is not a setting is
// ErrUnknownKey, with the key it probably misspells.
func ParseOption(key, value string) (Option, error) {
	i, ok := lookupKey(key)
	if !ok {
		if near, ok := nearKey(key); ok {
			return nil, fmt.Errorf("%w %q: did you mean %s?", ErrUnknownKey, key, settings[near].key)
		}
		return nil, fmt.Errorf("%w %q: expected one of %s", ErrUnknownKey, key, strings.Join(Keys(), ", "))
	}
	var parsed Config
	if err := parsed.setValue(i, value, ""); err != nil {
		return nil, err
	}
	return option(settings[i].key, func(c *Config) { settings[i].take(c, &parsed) }), nil
}

// NewConfig returns the Config that the options set.
func NewConfig(opts ...Option) Config {
	var c Config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}
