package config

import (
	"strconv"
	"strings"
	"time"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/tables/limits"
	"github.com/crl-go/crl/internal/text/sqlscan"
)

// setting is everything this package knows about one setting of Config:
// its key, how a DSN parameter or a properties line is read into it, the
// range a value set in code must be in, and the values docs/configuration.md
// lists for it (a test holds the docs to this table). Precedence (has,
// over), the DSN and properties readers, the near-miss check and Keys are
// all derived from the table; adding a setting is a Config field, an entry
// here and its With option.
type setting struct {
	key    string // as the JDBC driver spells it (matched case-insensitively); for a code-only setting, a name for it
	code   bool   // only code sets it (no DSN or file key)
	inFile bool   // the properties file accepts it
	addsUp bool   // several lines of it in a properties file add up, joined by ';'
	// startOnly: it is read once, when the handle is built; an edit of its
	// properties line is reported (ErrRestartRequired) and applies at the
	// next start.
	startOnly bool
	values    string // the values the key takes: the "range / values" cell of docs/configuration.md's key table
	want      string // what a malformed value is told it should be, when parse says no more

	isSet func(c *Config) bool   // the field is not its zero value
	take  func(dst, src *Config) // copies the field from src to dst

	// parse reads the trimmed text v into c. Its error is an errWant
	// (reported with want), a reasonError, or a cause whose text is the
	// reason.
	parse func(c *Config, v string) error
	// check reports a value set in code that is out of range, with the
	// value as text; nil when every value is in range.
	check func(c *Config) (string, error)
}

// The keys that code refers to by name.
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
	keyTxReplay             = "txReplay"
	keyTxReplayLimit        = "txReplayLimit"
	nameClock               = "clock"
	nameObserver            = "observer"
	nameDriverFamily        = "driverFamily"
)

// settings is the table of settings, in the order of Keys; validate
// checks them in this order.
var settings = [...]setting{
	ruleList(func(c *Config) (*string, **compiled[core.StatementRules]) { return &c.RetryExec, &c.exec }, core.ParseStatementRules, setting{
		key: keyRetryExec, inFile: true, addsUp: true,
		values: "rule list, see [rules](rules.md)",
	}),
	ruleList(func(c *Config) (*string, **compiled[core.ConnectionRules]) { return &c.RetryConn, &c.conn }, core.ParseConnectionRules, setting{
		key: keyRetryConn, inFile: true, addsUp: true,
		values: "`{[+]errors}` rules",
	}),
	single(func(c *Config) *int { return &c.ConnectRetryCount }, setting{
		key: keyConnectRetryCount, inFile: true,
		values: "`0`..`255`; `0` turns connection retries off",
		want:   "expected a whole number from 0 (off) to 255",
		parse: func(c *Config, v string) error {
			n, err := strconv.ParseUint(v, 10, 8)
			if err != nil || n > limits.MaxRetryCount {
				return errWant
			}
			c.ConnectRetryCount = int(n)
			if n == 0 {
				c.ConnectRetryCount = core.Disabled
			}
			return nil
		},
		check: func(c *Config) (string, error) {
			n := c.ConnectRetryCount
			return strconv.Itoa(n), limits.ConnectRetryCount(n)
		},
	}),
	single(func(c *Config) *time.Duration { return &c.ConnectRetryInterval }, setting{
		key: keyConnectRetryInterval, inFile: true,
		values: "`1`..`60` s",
		want:   "expected seconds from 1 to 60, such as 10 or 10s",
		parse:  timeParser(func(c *Config) *time.Duration { return &c.ConnectRetryInterval }, limits.MinConnectInterval, limits.MaxConnectInterval, nil),
		check: func(c *Config) (string, error) {
			d := c.ConnectRetryInterval
			return d.String(), limits.ConnectRetryInterval(d)
		},
	}),
	single(func(c *Config) *time.Duration { return &c.LoginTimeout }, setting{
		key: keyLoginTimeout, inFile: true,
		values: "`0`..`65535` s; `0` means the default 30 s",
		want:   "expected seconds from 0 (the default, 30) to 65535, such as 30 or 30s",
		parse:  timeParser(func(c *Config) *time.Duration { return &c.LoginTimeout }, 0, limits.MaxLoginTimeout, nil),
		check: func(c *Config) (string, error) {
			d := c.LoginTimeout
			return d.String(), limits.LoginTimeout(d)
		},
	}),
	single(func(c *Config) *time.Duration { return &c.QueryTimeout }, setting{
		key: keyQueryTimeout, inFile: true,
		values: "`-1`, `0`, or seconds > 0",
		want:   "expected -1 (none), 0, or seconds such as 30 or 1.5s",
		parse: timeParser(func(c *Config) *time.Duration { return &c.QueryTimeout }, 1, maxDuration,
			map[string]time.Duration{"-1": 0, "0": core.JDBCQueryTimeoutZero}), // -1: explicitly not set, as in JDBC
		check: func(c *Config) (string, error) {
			d := c.QueryTimeout
			return d.String(), limits.QueryTimeout(d)
		},
	}),
	single(func(c *Config) *time.Duration { return &c.RetryRefresh }, setting{
		key: keyRetryRefresh, inFile: true,
		values: "a time > 0, or `off`",
		want:   "expected a time greater than zero such as 30 (seconds), 500ms or 1m, or off",
		parse: timeParser(func(c *Config) *time.Duration { return &c.RetryRefresh }, 1, maxDuration,
			map[string]time.Duration{"off": -1}),
	}),
	{
		key: keyRetryBudget, inFile: true, startOnly: true,
		values: "`off`, `on`, or any of `max=` (2..1000000, ≥ 2 × each cost), `earn=` (0.001..1), `contentionCost=`, `overloadCost=` (0.001..1000), `contentionPerSuccess=` (1..10000), `contention=`, `overload=`, `transient=` (error tokens separated by a vertical bar) separated by `,`",
		isSet:  func(c *Config) bool { return c.NoBudget || c.Budget != core.BudgetSettings{} },
		take:   func(dst, src *Config) { dst.Budget, dst.NoBudget = src.Budget, src.NoBudget },
		parse: func(c *Config, v string) (err error) {
			c.Budget, c.NoBudget, err = parseBudget(v)
			return err
		},
		check: func(c *Config) (string, error) { return formatBudget(c.Budget), c.Budget.Validate() },
	},
	single(func(c *Config) *core.Jitter { return &c.Jitter }, setting{
		key: keyRetryJitter, inFile: true,
		values: "`none`, `full`, `equal`",
		want:   "expected none, full or equal",
		parse: func(c *Config, v string) (err error) {
			if err = c.Jitter.UnmarshalText([]byte(v)); err != nil {
				return &reasonError{cause: err}
			}
			return nil
		},
		check: func(c *Config) (string, error) {
			return strconv.Itoa(int(c.Jitter)), inRange(c.Jitter <= core.JitterEqual, "expected none, full or equal")
		},
	}),
	single(func(c *Config) *core.BreakerSettings { return &c.Breaker }, setting{
		key: keyRetryBreaker, inFile: true, startOnly: true,
		values: "`off`, or `failures=N[,open=T]` (N 1..1073741823; T a time > 0 up to 24 h, default 30 s)",
		parse: func(c *Config, v string) (err error) {
			c.Breaker, err = parseBreaker(v)
			return err
		},
		check: func(c *Config) (string, error) {
			return "failures=" + strconv.Itoa(c.Breaker.Failures) + ",open=" + c.Breaker.OpenFor.String(), c.Breaker.Validate()
		},
	}),
	single(func(c *Config) *time.Duration { return &c.ExecutionCutoff }, setting{
		key: keyExecutionCutoff, inFile: true, startOnly: true,
		values: "`off`, `on` (the queryTimeout), or a time > 0",
		want:   "expected off, on (the queryTimeout), or a time greater than zero such as 30 (seconds) or 500ms",
		parse: timeParser(func(c *Config) *time.Duration { return &c.ExecutionCutoff }, 1, maxDuration,
			map[string]time.Duration{"off": 0, "none": 0, "false": 0, "on": CutoffQueryTimeout, "true": CutoffQueryTimeout}),
		check: func(c *Config) (string, error) {
			if c.ExecutionCutoff == CutoffQueryTimeout && c.QueryTimeout <= 0 {
				return "on", errorf("on means the queryTimeout, which is not set to a positive time")
			}
			return c.ExecutionCutoff.String(), inRange(c.ExecutionCutoff >= CutoffQueryTimeout,
				"expected a time greater than zero, off, or on (the queryTimeout)")
		},
	}),
	single(func(c *Config) *bool { return &c.NoTxReplay }, setting{
		key: keyTxReplay, inFile: true, startOnly: true,
		values: "`on`, `off`",
		want:   "expected on or off",
		parse: func(c *Config, v string) error {
			switch strings.ToLower(v) {
			case "on", "true":
				c.NoTxReplay = false
			case "off", "false":
				c.NoTxReplay = true
			default:
				return errWant
			}
			return nil
		},
	}),
	single(func(c *Config) *int { return &c.TxReplayLimit }, setting{
		key: keyTxReplayLimit, inFile: true, startOnly: true,
		values: "`1`..`1000000` statements",
		want:   "expected a whole number of statements from 1 to 1000000",
		parse: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxTxReplayLimit {
				return errWant
			}
			c.TxReplayLimit = n
			return nil
		},
		check: func(c *Config) (string, error) {
			n := c.TxReplayLimit
			return strconv.Itoa(n), inRange(n >= 0 && n <= maxTxReplayLimit, "expected a whole number of statements from 1 to 1000000, or 0 for the default 1000")
		},
	}),
	single(func(c *Config) *string { return &c.PropertiesPath }, setting{
		key:    keyRetryProperties,
		values: "a path",
		want:   "expected the path of a properties file",
		parse: func(c *Config, v string) error {
			c.PropertiesPath = v
			return inRange(v != "", "")
		},
	}),
	single(func(c *Config) *core.Clock { return &c.Clock }, setting{key: nameClock, code: true}),
	single(func(c *Config) *core.Observer { return &c.Observer }, setting{key: nameObserver, code: true}),
}

// Config.set has one bit per setting; this does not compile when the table
// outgrows it.
const _ = uint16(1<<len(settings) - 1)

const maxDuration time.Duration = 1<<63 - 1

// maxTxReplayLimit is the largest txReplayLimit: a record of more
// statements costs more memory per connection than a replay can save.
const maxTxReplayLimit = 1_000_000

// single fills in isSet and take of s for the single field that p points to.
func single[T comparable](p func(*Config) *T, s setting) setting {
	var zero T
	s.isSet = func(c *Config) bool { return *p(c) != zero }
	s.take = func(dst, src *Config) { *p(dst) = *p(src) }
	return s
}

// ruleList fills in isSet, take and parse of s for a rule list: the text
// and the compiled rules that p points to, which go together. A list that
// parses is kept as written, with its rules.
func ruleList[R any](p func(*Config) (*string, **compiled[R]), parse func(string) (R, error), s setting) setting {
	s.isSet = func(c *Config) bool {
		text, _ := p(c)
		return *text != ""
	}
	s.take = func(dst, src *Config) {
		dstText, dstRules := p(dst)
		srcText, srcRules := p(src)
		*dstText, *dstRules = *srcText, *srcRules
	}
	s.parse = func(c *Config, v string) error {
		rules := compile(v, parse)
		if rules.err != nil {
			return rules.err
		}
		text, dst := p(c)
		*text, *dst = v, rules
		return nil
	}
	return s
}

// compiled is a rule list as written and as compiled (or the error that
// compiling it gave). Config shows the text (crl explain, errors) and
// Policy hands the rules to core, so that a list read from the DSN, the
// properties file or an option is parsed once. It is immutable.
type compiled[R any] struct {
	text  string
	rules R
	err   error
}

// compile compiles the rule list text with parse.
func compile[R any](text string, parse func(string) (R, error)) *compiled[R] {
	rules, err := parse(text)
	return &compiled[R]{text: text, rules: rules, err: err}
}

// of returns the rules of text: c's when c holds text, else text parsed
// now (a Config built as a literal has no compiled rules).
func (c *compiled[R]) of(text string, parse func(string) (R, error)) (R, error) {
	if c != nil && c.text == text {
		return c.rules, c.err
	}
	return parse(text)
}

// timeParser reads a time with limits.ParseTime (a bare number is seconds,
// else a Go duration) from lo to hi, or one of the words (matched
// case-insensitively) that stand for a value.
func timeParser(p func(*Config) *time.Duration, lo, hi time.Duration, words map[string]time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		if d, ok := words[strings.ToLower(v)]; ok {
			*p(c) = d
			return nil
		}
		d, err := limits.ParseTime(v)
		if err != nil || d < lo || d > hi {
			return errWant
		}
		*p(c) = d
		return nil
	}
}

// errWant is a parse error whose reason is the setting's want.
var errWant = &reasonError{}

// inRange is nil when ok, else the reason (errWant when reason is "").
func inRange(ok bool, reason string) error {
	if ok {
		return nil
	}
	return &reasonError{reason: reason}
}

// valueError is the ValueError of a value of s that err rejects.
func (s *setting) valueError(source, value string, err error) error {
	ve := &ValueError{Source: source, Key: s.key, Value: value, Reason: err.Error(), Err: err}
	if r, ok := err.(*reasonError); ok {
		ve.Reason, ve.Err = r.reason, r.cause
		if ve.Reason == "" {
			ve.Reason = s.want
		}
	}
	return ve
}

// setValue parses value for settings[i] and sets it in c. source names
// where the value comes from, for errors.
func (c *Config) setValue(i int, value, source string) error {
	s := &settings[i]
	if err := s.parse(c, sqlscan.TrimSpace(value)); err != nil {
		return s.valueError(source, value, err)
	}
	c.set |= 1 << i
	return nil
}

// has reports whether settings[i] is set in c.
func (c *Config) has(i int) bool {
	return c.set&(1<<i) != 0 || settings[i].isSet(c)
}

// hasKey reports whether the setting named key is set in c.
func (c *Config) hasKey(key string) bool {
	for i := range settings {
		if settings[i].key == key {
			return c.has(i)
		}
	}
	return false
}

// mark records that the setting named key is set in c, even to zero.
func (c *Config) mark(key string) {
	for i := range settings {
		if settings[i].key == key {
			c.set |= 1 << i
			return
		}
	}
}

// over returns c with every setting that c does not set taken from lower:
// c takes precedence. It is how code, DSN, file and defaults are layered.
func (c Config) over(lower Config) Config {
	out := c
	for i := range settings {
		if !c.has(i) && lower.has(i) {
			settings[i].take(&out, &lower)
			out.set |= 1 << i
		}
	}
	return out
}

// validate checks the ranges of the settings that are not rules. source
// names where the values came from in errors ("option", "DSN" or "").
func (c *Config) validate(source string) error {
	for i := range settings {
		s := &settings[i]
		if s.check == nil {
			continue
		}
		if value, err := s.check(c); err != nil {
			return s.valueError(source, value, err)
		}
	}
	return nil
}

// parseBudget reads a retryBudget value: off, on (or default), or
// comma-separated settings max=20,earn=0.1,contentionCost=0.1,
// contentionPerSuccess=64,overloadCost=2 (timeoutCost is overloadCost's former name), and the
// class lists contention=, overload=, transient= (error tokens separated
// by '|'), any subset, each name case-insensitive, each value within its
// range (limits.BudgetSetting), max at least 2 × each cost.
func parseBudget(v string) (core.BudgetSettings, bool, error) {
	switch strings.ToLower(v) {
	case "off", "none", "false":
		return core.BudgetSettings{}, true, nil
	case "on", "default", "true":
		return core.BudgetSettings{}, false, nil
	}
	var s core.BudgetSettings
	err := eachSetting(v, "name=value", budgetWant, func(name, val string) error {
		return setBudget(&s, name, val)
	})
	if err == nil {
		if err = s.Validate(); err != nil {
			err = &reasonError{reason: strings.TrimPrefix(strings.TrimPrefix(err.Error(), "core: retry budget"), " "), cause: err}
		}
	}
	return s, false, err
}

// budgetWant is what a retryBudget value is expected to be, for errors.
const budgetWant = "expected off, on, or settings such as max=20,earn=0.1,contentionCost=0.1,overloadCost=2,contention=1205|3960"

// setBudget sets one setting of a retryBudget value, its name lower-cased.
func setBudget(s *core.BudgetSettings, name, val string) error {
	var field *float64
	switch name {
	case "max":
		field = &s.Max
	case "earn":
		field = &s.EarnPerAttempt
	case "contentioncost":
		field, name = &s.ContentionCost, "contentionCost"
	case "contentionpersuccess":
		field, name = &s.ContentionPerSuccess, "contentionPerSuccess"
	case "overloadcost", "timeoutcost":
		if s.OverloadCost != 0 {
			return errorf("overloadCost given twice (timeoutCost is its former name), %s", budgetWant)
		}
		field, name = &s.OverloadCost, "overloadCost"
	case "contention":
		s.Contention = val
		return nil
	case "overload":
		s.Overload = val
		return nil
	case "transient":
		s.Transient = val
		return nil
	case "refill":
		return errorf("refill=%s: the retry budget no longer refills with time (its bound would depend on the request rate); remove it, %s", val, budgetWant)
	default:
		return errorf("%q is not a budget setting, %s", name, budgetWant)
	}
	f, err := budgetNumber(name, val)
	if err != nil {
		return err
	}
	*field = f
	return nil
}

// budgetNumber reads the number of the budget setting name, within the
// limits of internal/tables/limits.
func budgetNumber(name, val string) (float64, error) {
	f, err := strconv.ParseFloat(val, 64)
	if err != nil || strings.ContainsFunc(val, func(r rune) bool { return !strings.ContainsRune("0123456789.eE+-", r) }) {
		return 0, errorf("%s=%q: expected a number, %s", name, val, budgetWant)
	}
	if err := limits.BudgetSetting(name, f); err != nil {
		return 0, &reasonError{reason: name + "=" + val + ": " + err.Error(), cause: err}
	}
	return f, nil
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
	}{{"max", s.Max}, {"earn", s.EarnPerAttempt}, {"contentionCost", s.ContentionCost},
		{"contentionPerSuccess", s.ContentionPerSuccess}, {"overloadCost", s.OverloadCost}} {
		if f.v != 0 { // zero is the default, which the reader's "on" means
			parts = append(parts, f.name+"="+strconv.FormatFloat(f.v, 'g', -1, 64))
		}
	}
	for _, l := range []struct{ name, v string }{{"contention", s.Contention}, {"overload", s.Overload}, {"transient", s.Transient}} {
		if l.v != "" {
			parts = append(parts, l.name+"="+l.v)
		}
	}
	if len(parts) == 0 {
		return "on"
	}
	return strings.Join(parts, ",")
}

// parseBreaker reads a retryBreaker value: off, or comma-separated settings
// failures=5,open=30s (open in seconds or with a unit; default 30 s), each
// within core's range (core.BreakerSettings.Validate).
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
			if err != nil || n < 1 || n > limits.MaxBreakerFailures {
				return errorf("failures=%q: expected a whole number from 1 to %d, %s", val, limits.MaxBreakerFailures, want)
			}
			s.Failures = int(n)
		case "open":
			d, err := limits.ParseTime(val)
			if err != nil || d == 0 || d > limits.MaxBreakerOpenFor {
				return errorf("open=%q: expected a time greater than zero and up to %v, such as 30 (seconds) or 30s", val, limits.MaxBreakerOpenFor)
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
