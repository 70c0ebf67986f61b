package config

import (
	"strconv"
	"strings"
	"time"

	"github.com/crl-go/crl/core"
)

// The keys, as the JDBC driver spells them (matched case-insensitively),
// and this project's own.
const (
	keyRetryExec            = "retryExec"
	keyRetryConn            = "retryConn"
	keyConnectRetryCount    = "connectRetryCount"
	keyConnectRetryInterval = "connectRetryInterval"
	keyLoginTimeout         = "loginTimeout"
	keyQueryTimeout         = "queryTimeout"
	keyRetryRefresh         = "retryRefresh"
	keyRetryBudget          = "retryBudget"
	keyRetryJitter          = "retryJitter"
	keyRetryBreaker         = "retryBreaker"
	keyExecutionCutoff      = "executionCutoff"
	keyRetryProperties      = "retryProperties"
)

// Keys returns the names of every setting that the DSN and the properties
// file accept (retryProperties only in the DSN), as the JDBC driver spells
// them; they are matched case-insensitively.
func Keys() []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.name
	}
	return out
}

// EnvProperties is the environment variable that names the properties file.
const EnvProperties = "CRL_PROPERTIES"

// DefaultPropertiesFile is the file name looked for in the working
// directory and next to the executable.
const DefaultPropertiesFile = "mssql-jdbc.properties"

const maxLoginTimeout = 65535 * time.Second

type key struct {
	name   string
	field  field
	inFile bool // accepted in the properties file
}

var keys = [...]key{
	{keyRetryExec, fieldRetryExec, true},
	{keyRetryConn, fieldRetryConn, true},
	{keyConnectRetryCount, fieldConnectRetryCount, true},
	{keyConnectRetryInterval, fieldConnectRetryInterval, true},
	{keyLoginTimeout, fieldLoginTimeout, true},
	{keyQueryTimeout, fieldQueryTimeout, true},
	{keyRetryRefresh, fieldRetryRefresh, true},
	{keyRetryBudget, fieldBudget, true},
	{keyRetryJitter, fieldJitter, true},
	{keyRetryBreaker, fieldBreaker, true},
	{keyExecutionCutoff, fieldCutoff, true},
	{keyRetryProperties, fieldProperties, false},
}

// lookupKey finds a key by name, case-insensitively, ignoring surrounding
// white space. It does not allocate.
func lookupKey(name string) (key, bool) {
	name = strings.TrimSpace(name)
	for _, k := range keys {
		if strings.EqualFold(name, k.name) {
			return k, true
		}
	}
	return key{}, false
}

// maxKeyDistance is the largest edit distance at which a key that is not
// ours is taken for a misspelling of one of ours. Every key of ours is at
// least nine letters long, and no key of go-mssqldb, go-sql-driver/mysql or
// pgx is this close to one (loginTimeout and pgx's lock_timeout, the
// closest pair, are three edits apart).
const maxKeyDistance = 2

// nearKey returns the key of ours that name probably misspells: the one
// within maxKeyDistance edits (insertions, deletions, substitutions and
// swaps of two neighbours), compared case-insensitively. A name that is
// one of ours exactly is not a near miss. It is the one check behind the
// DSN readers and the properties file.
func nearKey(name string) (key, bool) {
	name = strings.TrimSpace(name)
	if _, ok := lookupKey(name); ok || name == "" {
		return key{}, false
	}
	best, bestDist := key{}, maxKeyDistance+1
	for _, k := range keys {
		if d := editDistance(strings.ToLower(name), strings.ToLower(k.name), bestDist); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best, bestDist <= maxKeyDistance
}

// editDistance returns the optimal-string-alignment distance between a
// and b (bytes), or limit when it is limit or more.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	// Three rows: the one before the previous (for swaps), the previous, the current.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			v := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				v = min(v, prev2[j-2]+1)
			}
			cur[j] = v
			rowMin = min(rowMin, v)
		}
		if rowMin >= limit {
			return limit
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return min(prev[len(b)], limit)
}

// nearKeyError reports a DSN key that misspells one of ours: the driver
// would ignore it (go-mssqldb) or send it to the server, and the setting
// would silently not apply.
func nearKeyError(name string, k key) error {
	return &dsnError{err: ErrUnknownKey, reason: strconv.Quote(strings.TrimSpace(name)) +
		" is not a setting; did you mean " + k.name + "? (keys are case-insensitive; the driver would ignore the misspelt one)"}
}

// setValue parses value for k and sets it in c. source names where the
// value comes from, for errors.
func (c *Config) setValue(k key, value, source string) error {
	v := strings.TrimSpace(value)
	bad := func(reason string, err error) error {
		return &ValueError{Source: source, Key: k.name, Value: value, Reason: reason, Err: err}
	}
	switch k.field {
	case fieldRetryExec:
		if _, err := core.ParseStatementRules(v); err != nil {
			return bad(err.Error(), err)
		}
		c.RetryExec = v
	case fieldRetryConn:
		if _, err := core.ParseConnectionRules(v); err != nil {
			return bad(err.Error(), err)
		}
		c.RetryConn = v
	case fieldConnectRetryCount:
		n, err := strconv.ParseUint(v, 10, 8)
		if err != nil || n > core.MaxRetryCount {
			return bad("expected a whole number from 0 (off) to 255", nil)
		}
		c.ConnectRetryCount = int(n)
		if n == 0 {
			c.ConnectRetryCount = core.Disabled
		}
	case fieldConnectRetryInterval:
		d, ok := parseSeconds(v)
		if !ok || d < time.Second || d > time.Minute {
			return bad("expected seconds from 1 to 60, such as 10 or 10s", nil)
		}
		c.ConnectRetryInterval = d
	case fieldLoginTimeout:
		d, ok := parseSeconds(v)
		if !ok || d > maxLoginTimeout {
			return bad("expected seconds from 0 (the default, 30) to 65535, such as 30 or 30s", nil)
		}
		c.LoginTimeout = d
	case fieldQueryTimeout:
		switch v {
		case "-1":
			c.QueryTimeout = 0 // explicitly not set, as in JDBC
		case "0":
			c.QueryTimeout = core.QueryTimeoutZero
		default:
			d, ok := parseSeconds(v)
			if !ok || d == 0 {
				return bad("expected -1 (none), 0, or seconds such as 30 or 1.5s", nil)
			}
			c.QueryTimeout = d
		}
	case fieldRetryRefresh:
		if strings.EqualFold(v, "off") {
			c.RetryRefresh = -1
			break
		}
		d, ok := parseSeconds(v)
		if !ok || d == 0 {
			return bad("expected a time greater than zero such as 30 (seconds), 500ms or 1m, or off", nil)
		}
		c.RetryRefresh = d
	case fieldBudget:
		s, off, err := parseBudget(v)
		if err != nil {
			return bad(err.Error(), nil)
		}
		c.Budget, c.NoBudget = s, off
	case fieldJitter:
		j, err := core.ParseJitter(v)
		if err != nil {
			return bad("expected none, full or equal", err)
		}
		c.Jitter = j
	case fieldCutoff:
		switch strings.ToLower(v) {
		case "off", "none", "false":
			c.ExecutionCutoff = 0
		case "on", "true":
			c.ExecutionCutoff = CutoffQueryTimeout
		default:
			d, ok := parseSeconds(v)
			if !ok || d == 0 {
				return bad("expected off, on (the queryTimeout), or a time greater than zero such as 30 (seconds) or 500ms", nil)
			}
			c.ExecutionCutoff = d
		}
	case fieldBreaker:
		b, err := parseBreaker(v)
		if err != nil {
			return bad(err.Error(), nil)
		}
		c.Breaker = b
	case fieldProperties:
		if v == "" {
			return bad("expected the path of a properties file", nil)
		}
		c.PropertiesPath = v
	}
	c.set |= k.field
	return nil
}

// parseSeconds reads a time that is not negative with core.ParseTime, the
// syntax of the rules' times: a bare number is seconds, else a Go duration.
func parseSeconds(s string) (time.Duration, bool) {
	d, err := core.ParseTime(s)
	return d, err == nil
}

func isDecimal(s string) bool {
	if s == "" || s == "." || strings.Count(s, ".") > 1 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && s[i] != '.' {
			return false
		}
	}
	return true
}

// parseBudget reads a retryBudget value: off, on (or default), or
// comma-separated settings max=10,earn=0.1,timeoutCost=2, any subset, each
// name case-insensitive, each value within its range
// (core.CheckBudgetSetting), max at least 2 × timeoutCost.
func parseBudget(v string) (core.BudgetSettings, bool, error) {
	switch strings.ToLower(v) {
	case "off", "none", "false":
		return core.BudgetSettings{}, true, nil
	case "on", "default", "true":
		return core.BudgetSettings{}, false, nil
	}
	const want = "expected off, on, or settings such as max=10,earn=0.1,timeoutCost=2"
	var s core.BudgetSettings
	err := eachSetting(v, "name=number", want, func(name, num string) error {
		var field *float64
		switch name {
		case "max":
			field = &s.Max
		case "earn":
			field = &s.EarnPerAttempt
		case "timeoutcost":
			field, name = &s.TimeoutCost, "timeoutCost"
		case "refill":
			return errorf("refill=%s: the retry budget no longer refills with time (its bound would depend on the request rate); remove it, %s", num, want)
		default:
			return errorf("%q is not a budget setting, %s", name, want)
		}
		f, err := strconv.ParseFloat(num, 64)
		if err != nil || strings.ContainsFunc(num, func(r rune) bool { return !strings.ContainsRune("0123456789.eE+-", r) }) {
			return errorf("%s=%q: expected a number, %s", name, num, want)
		}
		if err := core.CheckBudgetSetting(name, f); err != nil {
			return errorf("%s=%s: %v", name, num, err)
		}
		*field = f
		return nil
	})
	if err == nil {
		if err = s.Validate(); err != nil {
			err = errorf("%s", strings.TrimPrefix(err.Error(), "core: retry budget "))
		}
	}
	return s, false, err
}

// eachSetting calls set for every name=value of a comma-separated list
// (names lower-cased, both trimmed), and reports a part without '=' or a
// name given twice. form names the expected shape of a part.
func eachSetting(v, form, want string, set func(name, value string) error) error {
	seen := map[string]bool{}
	for _, part := range strings.Split(v, ",") {
		name, val, ok := strings.Cut(part, "=")
		name, val = strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(val)
		if !ok {
			return errorf("%q is not %s, %s", strings.TrimSpace(part), form, want)
		}
		if seen[name] {
			return errorf("%s given twice, %s", name, want)
		}
		seen[name] = true
		if err := set(name, val); err != nil {
			return err
		}
	}
	return nil
}

// formatBudget prints budget settings as parseBudget reads them; zero
// (default) settings are left out.
func formatBudget(s core.BudgetSettings) string {
	var parts []string
	for _, f := range []struct {
		name string
		v    float64
	}{{"max", s.Max}, {"earn", s.EarnPerAttempt}, {"timeoutCost", s.TimeoutCost}} {
		if f.v != 0 { // zero is the default, which the reader's "on" means
			parts = append(parts, f.name+"="+strconv.FormatFloat(f.v, 'g', -1, 64))
		}
	}
	if len(parts) == 0 {
		return "on"
	}
	return strings.Join(parts, ",")
}

// parseBreaker reads a retryBreaker value: off, or comma-separated settings
// failures=5,open=30s (open in seconds or with a unit; default 30 s).
func parseBreaker(v string) (core.BreakerSettings, error) {
	const want = "expected off, or settings such as failures=5,open=30s"
	var s core.BreakerSettings
	if strings.EqualFold(v, "off") || strings.EqualFold(v, "none") || strings.EqualFold(v, "false") {
		return s, nil
	}
	err := eachSetting(v, "name=value", want, func(name, val string) error {
		switch name {
		case "failures":
			n, err := strconv.ParseUint(val, 10, 31)
			if err != nil || n < 1 || n > 1<<30 {
				return errorf("failures=%q: expected a whole number of at least 1, %s", val, want)
			}
			s.Failures = int(n)
		case "open":
			d, ok := parseSeconds(val)
			if !ok || d == 0 {
				return errorf("open=%q: expected a time greater than zero such as 30 (seconds) or 30s", val)
			}
			s.OpenFor = d
		default:
			return errorf("%q is not a breaker setting, %s", name, want)
		}
		return nil
	})
	if err != nil {
		return s, err
	}
	if s.Failures == 0 {
		return s, errorf("failures is missing, %s", want)
	}
	return s, nil
}
