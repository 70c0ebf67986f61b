package core

import (
	"fmt"
	"strconv"
	"time"

	"github.com/crl-go/crl/internal/tables/limits"
)

// The values of Policy fields whose zero value means "not set".
const (
	// Disabled, as ConnectRetryCount, turns connection retries off. It
	// exists so that "off" is not the ambiguous zero, which means the
	// default (1).
	Disabled = -1

	// JDBCQueryTimeoutZero, as Policy.QueryTimeout, is the JDBC driver's
	// queryTimeout=0: no attempt is bounded, and every retry whose wait is
	// longer than zero is refused with ErrInvalidRetryInterval (0 ≥ 0 turns
	// the JDBC check on).
	JDBCQueryTimeoutZero time.Duration = -1
)

// Policy is what the loops obey. The zero value is the JDBC defaults: no
// statement rules, the builtin connection list, connectRetryCount 1 (one
// immediate retry in each loop of the connection algorithm),
// connectRetryInterval 10 s, loginTimeout 30 s, no queryTimeout, no
// jitter. A Policy is immutable once handed to a Retrier.
type Policy struct {
	// Statement is the retryExec rules. Zero: no statement is retried (a
	// handle that config builds with no retryExec from any source gets
	// config.DefaultRetryExec instead).
	Statement StatementRules
	// Connection is the retryConn rules. Zero: the builtin list.
	Connection ConnectionRules
	// QueryTimeout is the JDBC queryTimeout. Zero means not set (the JDBC
	// default -1): waits are not checked and attempts are not bounded. A
	// positive value bounds each statement attempt and refuses a retry
	// whose wait is longer (ErrInvalidRetryInterval). JDBCQueryTimeoutZero is
	// JDBC's queryTimeout=0.
	QueryTimeout time.Duration
	// ConnectRetryCount is connectRetryCount, 0..255: how many times each
	// loop of the JDBC connection algorithm (the login loop and the
	// connection loop around it, see Retrier.Connect) retries. Zero means
	// the default 1; Disabled turns connection retries off.
	ConnectRetryCount int
	// ConnectRetryInterval is the wait between connection retries after
	// the first, which is immediate; 1 s..60 s. Zero means 10 s.
	ConnectRetryInterval time.Duration
	// LoginTimeout bounds the whole connection algorithm: every attempt
	// ends by its start + LoginTimeout. Zero means 30 s.
	LoginTimeout time.Duration
	// Jitter randomises statement and transaction waits. Zero: none.
	Jitter Jitter
}

// Validate reports a field out of its range, naming it and its value
// (the ranges are internal/tables/limits', which config's checks use too).
func (p *Policy) Validate() error {
	for _, f := range [...]struct {
		name, value string
		err         error
	}{
		{"connectRetryCount", strconv.Itoa(p.ConnectRetryCount), limits.ConnectRetryCount(p.ConnectRetryCount)},
		{"connectRetryInterval", p.ConnectRetryInterval.String(), limits.ConnectRetryInterval(p.ConnectRetryInterval)},
		{"loginTimeout", p.LoginTimeout.String(), limits.LoginTimeout(p.LoginTimeout)},
		{"queryTimeout", p.QueryTimeout.String(), limits.QueryTimeout(p.QueryTimeout)},
	} {
		if f.err != nil {
			return fmt.Errorf("core: %s %s: %w", f.name, f.value, f.err)
		}
	}
	if p.Jitter > JitterEqual {
		return fmt.Errorf("core: jitter %d: expected none, full or equal", p.Jitter)
	}
	return nil
}

func (p *Policy) connectRetryCount() int {
	switch {
	case p.ConnectRetryCount == 0:
		return limits.DefaultConnectRetryCount
	case p.ConnectRetryCount < 0:
		return 0
	}
	return p.ConnectRetryCount
}

func (p *Policy) connectRetryInterval() time.Duration {
	if p.ConnectRetryInterval <= 0 {
		return limits.DefaultConnectRetryInterval
	}
	return p.ConnectRetryInterval
}

func (p *Policy) loginTimeout() time.Duration {
	if p.LoginTimeout <= 0 {
		return limits.DefaultLoginTimeout
	}
	return p.LoginTimeout
}
