// Command crl checks Configurable Retry Logic settings and explains what
// they do, reading them exactly as a crl handle would, and finds Go code
// that loses crl's retries or is not safe to run again (crl vet).
//
//	crl check '{1205,1222:3,2*2:select,update}'
//	crl check -conn '{+4060}'
//	crl check -dsn 'sqlserver://h?retryExec={1205:3}&queryTimeout=5'
//	crl check -file mssql-jdbc.properties
//	crl explain '{1205:3,2*2}'
//	crl explain -querytimeout 5 '{1205:5,2*2}'
//	crl vet ./...
//
// Run crl help for what each command does. check exits 0 when everything
// parses and 1 with an error naming the bad value otherwise; a command line
// that cannot be understood exits 2.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/tables/family"
	"github.com/crl-go/crl/internal/tables/limits"
	"github.com/crl-go/crl/internal/tables/mssqldsn"
	"github.com/crl-go/crl/internal/text/quote"
	"github.com/crl-go/crl/internal/text/redact"
)

const help = `crl checks Configurable Retry Logic settings (the retryExec and retryConn
rules of the Microsoft JDBC driver, as crl reads them) and explains what they do.

Usage:
  crl check   [RULES] [-conn RULES] [-dsn DSN [-driver NAME]] [-file PATH]
  crl explain [RULES] [-conn RULES] [-dsn DSN [-driver NAME]] [-file PATH] [-querytimeout TIME]
  crl vet     [-all] [PACKAGES]
  crl help

RULES is a retryExec value (statement rules); -conn takes a retryConn value
(connection rules). Quote them: the shell would otherwise expand the braces.
A rule may name errors by class instead of number: deadlock, serialization,
lockTimeout, failover, throttle, timeout, badconn (check and explain print
the numbers each stands for on the DSN's database). With no retryExec from
any source, a handle runs the default rule {deadlock,serialization:3,100ms*2};
retryExec= with no value turns it off.

Commands:
  check    Reads the settings exactly as a crl handle would: the rules given
           here, over the DSN's settings, over the properties file (-file,
           else the DSN's retryProperties, else $CRL_PROPERTIES, else
           mssql-jdbc.properties in the working directory or next to crl for
           SQL Server), over the defaults. Prints which properties file is in
           effect, and the connection rules of the DSN's database. Exits 0
           when all of it is valid, 1 with an error naming the bad value or
           a rule that cannot work as written: a filter word that misspells
           a statement keyword (selct), a wait longer than 65535 s. Warns of
           a filter word that is no statement keyword (a procedure's name?)
           and of a wait longer than a minute, with its wait table.
             crl check '{1205,1222:3,2*2:select,update}'
             crl check '{1205:3,2AND2}'        (exit 1: "2AND2" is not a number)
             crl check '{1213:3,5s*2:selct}'   (exit 1: did you mean select?)
             crl check -dsn 'sqlserver://db?database=shop&retryExec={1205:3,1}'
  explain  Does what check does, then prints, for each error of the statement
           rules, the wait before each retry, the time elapsed in waits so far,
           and the retries that queryTimeout refuses; then the connection loop.
             crl explain '{1205:3,2*2}'
             crl explain -querytimeout 5 '{1205:5,2*2}'
             crl explain -dsn 'u@tcp(db)/shop' '{deadlock,lockTimeout:3,100ms*2}'
  vet      Runs crlvet (the analyzer: beside crl, on PATH, or built for the
           run from crl's clone or crl's version) on Go packages (default:
           the one in the working directory), test files included, and
           reports what loses crl's retries or is not safe to run again:
           transactions begun by hand (database/sql, sqlx, GORM, ent, bun),
           which are not retried, with the helper that re-runs the whole transaction (crl.RunInTx,
           sqlxcrl.RunInTxx, gormcrl.Transaction, crl.Retry); closures given
           to those helpers that write variables from outside them without
           resetting them, or commit or roll back their transaction; the
           embedded sqlx handle taken out of a sqlxcrl handle; GORM's db.DB()
           and db.ConnPool used to run statements; GORM calls inside
           crl.Retry's function (or a function it calls) on a *gorm.DB
           without its context, which the unit does not see. Handles of those libraries
           are checked in packages that import crl (every package with
           -all). //crlvet:ignore <reason> on a line silences its finding.
           Exits 1 when it finds one.
             crl vet ./...
  help     Prints this text (as does crl -h; crl with no command prints it
           to stderr and exits 2).

Flags:
  -conn RULES          retryConn rules, e.g. '{+4060}'
  -dsn DSN             a DSN whose retry settings to read (its driver is inferred
                       from its form: sqlserver://, server=…;, odbc: → sqlserver;
                       user@tcp(host)/db → mysql; postgres://, host=… → pgx);
                       crl prints it with its password and tokens masked
  -driver NAME         the DSN's driver when its form does not tell: sqlserver,
                       mysql or pgx (default: inferred; sqlserver without -dsn)
  -file PATH           the properties file (mssql-jdbc.properties) to read
  -querytimeout TIME   queryTimeout, over the DSN's (explain and check;
                       -queryTimeout too). It takes what the DSN key takes:
                       seconds (5, 1.5) or a time with a unit (5s, 500ms);
                       0 is JDBC's queryTimeout=0, -1 none
  -exec RULES          retryExec rules, the same as RULES
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options is what the command line asks for.
type options struct {
	exec, conn, dsn, driver, file string
	queryTimeout                  config.Option // nil: not given
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		// As go does: no command is a command line that cannot be
		// understood, and the help goes where errors go.
		fmt.Fprint(stderr, help)
		return 2
	}
	switch cmd := args[0]; cmd {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, help)
		return 0
	case "vet":
		if len(args) > 1 && strings.HasPrefix(args[1], "-") {
			if h := strings.TrimLeft(args[1], "-"); h == "h" || h == "help" {
				fmt.Fprint(stdout, help)
				return 0
			}
		}
		return vet(args[1:], stdout, stderr) // vet checks its flags
	case "check", "explain":
		return checkOrExplain(cmd, args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "crl: unknown command %q: expected check, explain, vet or help\n\n%s", cmd, help)
		return 2
	}
}

// checkOrExplain runs crl check or crl explain (cmd) with the command's
// arguments.
func checkOrExplain(cmd string, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(cmd, args)
	// Every message quotes the DSN redacted; a message of the driver or of
	// a library that quotes a piece of it is scrubbed too.
	stdout, stderr = scrub(stdout, o.dsn), scrub(stderr, o.dsn)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, help)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "crl %s: %v\nRun crl help for the usage.\n", cmd, err)
		return 2
	}
	rt, driver, err := load(o)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	// The policy the handle's retrier runs, compiled once by config.NewRuntime.
	cfg, policy := rt.Config(), rt.Retrier().Policy()
	printSources(stdout, rt, driver)
	// Rules that parse but cannot work as written: errors fail both
	// commands, and explain still prints its table, which shows why.
	errs, warnings := lint(policy)
	for _, warn := range warnings {
		fmt.Fprintln(stdout, "warning:", warn.msg)
		if warn.rules != nil && cmd == "check" { // explain prints every rule's table below
			waitTable(stdout, warn.rules, policy)
		}
	}
	code := 0
	if len(errs) > 0 {
		fmt.Fprintln(stderr, strings.Join(errs, "\n"))
		code = 1
	}
	fam := family.Of(driver)
	if cmd == "check" {
		if code == 0 {
			fmt.Fprintf(stdout, "ok: %d statement rule(s), connection rules %s\n", policy.Statement.Len(), connSummary(policy.Connection, fam))
			if cfg.UsesDefaultRule() {
				fmt.Fprintln(stdout, defaultRuleLine)
			}
			for _, line := range classLines(policy, driver) {
				fmt.Fprintln(stdout, line)
			}
			fmt.Fprintln(stdout, connectionLine(policy, fam))
		}
		return code
	}
	fmt.Fprintln(stdout, replayLine(cfg))
	explain(stdout, policy, driver, cfg.UsesDefaultRule())
	return code
}

// replayLine says whether transactions are replayed (txReplay) and up to
// how many statements (txReplayLimit).
func replayLine(cfg config.Config) string {
	n := cfg.ReplayLimit()
	if n == 0 {
		return "transaction replay: off (txReplay=off): a failed transaction is retried only by a helper that re-runs it"
	}
	return fmt.Sprintf("transaction replay: on, transactions of up to %d statements (txReplayLimit)", n)
}

// printSources prints where the handle's settings come from (its
// properties file) and the notes on its rules and its retry budget.
func printSources(stdout io.Writer, rt *config.Runtime, driver string) {
	cfg, policy := rt.Config(), rt.Retrier().Policy()
	if path := rt.PropertiesPath(); path != "" {
		fmt.Fprintf(stdout, "properties file: %s\n", path)
	} else {
		fmt.Fprintln(stdout, "properties file: none")
	}
	for _, note := range notes(cfg.RetryExec) {
		fmt.Fprintln(stdout, "note:", note)
	}
	if note := budgetNote(policy.Statement, rt.Retrier().Budget(), cfg.Budget, driver); note != "" {
		fmt.Fprintln(stdout, "note:", note)
	}
}

// defaultRuleLine tells that no source sets retryExec, so the handle runs
// the default rule.
const defaultRuleLine = "statement rules: the default rule " + config.DefaultRetryExec +
	", since no retryExec is set (retryExec= with no value turns it off); its waits are fully jittered unless retryJitter is set"

// classLines names, for each class (deadlock, failover, ...) that the
// statement or connection rules of p name, the errors it stands for on
// the family of driver, so that a rule written by meaning can be read by
// number.
func classLines(p core.Policy, driver string) []string {
	fam := family.Of(driver)
	var out []string
	seen := map[string]bool{}
	for _, r := range p.Statement.Rules() {
		if tok := r.Token(); !isNumberToken(tok) && !seen[tok] {
			seen[tok] = true
			out = append(out, classLine(tok, r.Errors(driver), fam))
		}
	}
	// ConnectionRules prints its tokens as {[+]tok,...}; a class reads the
	// same in a statement rule, whose Errors name its numbers.
	for _, tok := range strings.Split(strings.Trim(p.Connection.String(), "{+}"), ",") {
		if tok == "" || isNumberToken(tok) || seen[tok] {
			continue
		}
		seen[tok] = true
		if rules, err := core.ParseStatementRules("{" + tok + ":0}"); err == nil && rules.Len() == 1 {
			out = append(out, classLine(tok, rules.Rules()[0].Errors(driver), fam))
		}
	}
	return out
}

// classLine names the errors errs that the class tok stands for on fam.
func classLine(tok string, errs []string, fam family.Family) string {
	switch {
	case tok == "badconn":
		return "class badconn: a broken connection (no error number)"
	case tok == "timeout":
		if len(errs) == 0 {
			return "class timeout: an attempt that ran out of its time (queryTimeout, the context's deadline)"
		}
		return "class timeout on " + fam.String() + ": an attempt that ran out of its time, and the execution cut-off's " + strings.Join(errs, ", ")
	case len(errs) == 0:
		return "class " + tok + ": no errors on a driver whose family crl does not know (give -driver sqlserver, mysql or pgx)"
	}
	return "class " + tok + " on " + fam.String() + ": " + strings.Join(errs, ", ")
}

// isNumberToken reports an error number or a SQLSTATE, as opposed to a
// class: both start with a digit.
func isNumberToken(tok string) bool { return tok != "" && tok[0] >= '0' && tok[0] <= '9' }

// parseFlags reads the flags and the one RULES argument, in any order.
func parseFlags(cmd string, args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("crl "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by run, help by help
	fs.StringVar(&o.exec, "exec", "", "")
	fs.StringVar(&o.conn, "conn", "", "")
	fs.StringVar(&o.dsn, "dsn", "", "")
	fs.StringVar(&o.driver, "driver", "", "")
	fs.StringVar(&o.file, "file", "", "")
	// The flag takes what the DSN key takes, read by the same parser.
	queryTimeout := func(s string) (err error) {
		o.queryTimeout, err = config.ParseOption("queryTimeout", s)
		return err
	}
	// Both spellings: the JDBC key is queryTimeout, flags are usually lower case.
	fs.Func("querytimeout", "", queryTimeout)
	fs.Func("queryTimeout", "", queryTimeout)
	var rules []string
	for {
		if err := fs.Parse(args); err != nil {
			return o, err
		}
		if fs.NArg() == 0 {
			break
		}
		rules = append(rules, fs.Arg(0))
		args = fs.Args()[1:]
	}
	switch {
	case o.driver != "" && !knownDriver(o.driver):
		return o, fmt.Errorf("-driver %q is not a driver whose DSN crl reads: expected sqlserver, mysql or pgx", o.driver)
	case len(rules) > 1:
		return o, fmt.Errorf("one RULES argument expected, got %d: %q (quote the rules; join several with ';')", len(rules), rules)
	case len(rules) == 1 && o.exec != "":
		return o, fmt.Errorf("retryExec rules given twice: %q and -exec %q", rules[0], o.exec)
	case len(rules) == 1:
		o.exec = rules[0]
	}
	return o, nil
}

// load reads the settings with the library's own config.NewRuntime, as a handle
// opened with this DSN and these options would.
func load(o options) (_ *config.Runtime, driver string, _ error) {
	driver = o.driver
	if driver == "" {
		var err error
		if driver, err = inferDriver(o.dsn); err != nil {
			return nil, "", err
		}
	}
	var opts []config.Option
	if o.file != "" {
		opts = append(opts, config.WithPropertiesFile(o.file))
	}
	if o.exec != "" {
		opts = append(opts, config.WithRetryExec(o.exec))
	}
	if o.conn != "" {
		opts = append(opts, config.WithRetryConn(o.conn))
	}
	if o.queryTimeout != nil {
		opts = append(opts, o.queryTimeout)
	}
	rt, _, err := config.NewRuntime(driver, o.dsn, opts...)
	return rt, driver, err
}

// inferDriver tells the driver of a DSN from its form, as a user would
// open it: sqlserver (go-mssqldb), mysql (go-sql-driver/mysql) or pgx. No
// DSN is a SQL Server handle's settings.
func inferDriver(dsn string) (string, error) {
	s := strings.TrimSpace(dsn)
	lower := strings.ToLower(s)
	switch {
	case s == "":
		return "sqlserver", nil
	case strings.HasPrefix(lower, "sqlserver://"), strings.HasPrefix(lower, "odbc:"):
		return "sqlserver", nil
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		return "pgx", nil
	case strings.Contains(lower, "@tcp("), strings.Contains(lower, "@unix("), strings.Contains(lower, "@/"),
		strings.HasPrefix(s, "/"), strings.HasPrefix(lower, "tcp("):
		return "mysql", nil
	case hasKey(lower, ";", func(k string) bool { return mssqldsn.IsServerKey(k, false) }):
		return "sqlserver", nil // an ADO server key (server=h; user id=sa): before the PostgreSQL keys, which share user
	case hasKey(lower, " ", isPgxKey):
		return "pgx", nil // before a bare ';': a rule value may hold one
	case strings.Contains(s, ";"):
		return "sqlserver", nil
	}
	return "", fmt.Errorf("crl: cannot tell the driver of DSN %q from its form: give -driver sqlserver, mysql or pgx", abbreviate(redact.DSN(dsn)))
}

// knownDriver reports a driver name whose DSN config.ParseDSN reads, so
// that a misspelt -driver is an error rather than a DSN read as nobody's.
func knownDriver(name string) bool { return family.Of(name) != family.Other }

// hasKey reports whether a key=value list separated by sep has a key
// (trimmed) for which is reports true.
func hasKey(s, sep string, is func(key string) bool) bool {
	for _, part := range strings.Split(s, sep) {
		if k, _, ok := strings.Cut(part, "="); ok && is(strings.TrimSpace(k)) {
			return true
		}
	}
	return false
}

// isPgxKey reports whether key is one of the keys that tell a PostgreSQL
// key=value DSN (host=h dbname=d).
func isPgxKey(key string) bool {
	switch key {
	case "host", "hostaddr", "dbname", "user", "sslmode":
		return true
	}
	return false
}

// abbreviate cuts a long value for a message (a DSN is redacted before it
// is cut, so no cut leaves part of a secret).
func abbreviate(s string) string { return quote.Abbreviate(s, 57) }

// notes points at rules that parse but may not say what their author
// meant: a time with a unit or a fraction and no change keeps the JDBC
// default change of +2 s, so {1205:3,10ms} waits 10ms, 2.01s, 4.01s.
func notes(retryExec string) []string {
	var out []string
	for _, raw := range strings.Split(retryExec, ";") {
		body := strings.Trim(strings.TrimSpace(raw), "{} ")
		sections := strings.Split(body, ":")
		if len(sections) < 2 {
			continue
		}
		_, initial, ok := strings.Cut(sections[1], ",")
		initial = strings.TrimSpace(initial)
		if !ok || strings.ContainsAny(initial, "+*") || !strings.ContainsAny(initial, ".abcdefghijklmnopqrstuvwxyz") {
			continue
		}
		out = append(out, fmt.Sprintf("rule %q: without a change the waits grow by 2 s each retry (the JDBC default); write %s+0 for a constant wait",
			strings.TrimSpace(raw), initial))
	}
	return out
}

// budgetNote points at a rule that allows more retries than the retry
// budget (nil: off; built from settings) lets one statement run on a
// fresh handle of driver's family, for the class of the rule's error
// (Budget.Allowance), with the smallest max that runs them all, or "".
func budgetNote(rules core.StatementRules, budget *core.Budget, settings core.BudgetSettings, driver string) string {
	if budget == nil {
		return ""
	}
	maxTokens := budget.Available() // the handle's budget is new, so full: its capacity
	for _, r := range rules.Rules() {
		allowance := budget.Allowance(driver, r.Token())
		if r.Count() > allowance {
			return fmt.Sprintf("rule %s allows %d retries, but the retry budget (max=%g) lets one statement retry a %s error %s at most %d times on a fresh handle; set retryBudget=max=%s to run them all, or retryBudget=off (docs/semantics.md, The retry budget)",
				r.Token(), r.Count(), maxTokens, driver, r.Token(), allowance, maxFor(settings, driver, r.Token(), r.Count(), maxTokens, allowance))
		}
	}
	return ""
}

// maxFor returns the smallest whole max with which a budget of settings
// allows count retries of tok: the allowance grows in proportion to max
// (the contention pool only once max/2 exceeds two successes' worth), so
// the proportional max is where the search starts.
func maxFor(settings core.BudgetSettings, driver, tok string, count int, maxTokens float64, allowance int) string {
	m := math.Ceil(maxTokens * float64(count) / float64(max(allowance, 1)))
	for ; m <= 1_000_000; m++ {
		settings.Max = m
		b, err := core.NewBudget(settings)
		if err == nil && b.Allowance(driver, tok) >= count {
			return strconv.FormatFloat(m, 'f', -1, 64)
		}
	}
	return "1000000"
}

// connSummary tells the errors the connection loop retries for a server
// of family fam: the builtin list holds SQL Server's login errors, so for
// a family it does not apply to (family.Profile.TransientList) only the
// errors retryConn names.
func connSummary(c core.ConnectionRules, fam family.Family) string {
	if !fam.Profile().TransientList {
		if c.String() == "" {
			return "none named (the builtin list holds SQL Server's login errors, no " + fam.String() + " error; name them in retryConn, such as " + connExample(fam) + ")"
		}
		return c.String() + " (the builtin list holds SQL Server's login errors: these alone for " + fam.String() + ")"
	}
	switch {
	case c.String() == "":
		return "the builtin list"
	case c.Replaces():
		return c.String() + " (replacing the builtin list)"
	}
	return c.String() + " (added to the builtin list)"
}

// connExample is a retryConn value for a server of family fam: its
// error of too many connections (family.Profile.TooManyConnections), or
// a placeholder for a family that has none to show.
func connExample(fam family.Family) string {
	if tok := fam.Profile().TooManyConnections; tok != "" {
		return "{+" + tok + "}"
	}
	return "{+<error number>}"
}

// explain prints the wait table of the statement rules, the errors each
// class they name stands for, and the connection loop's settings, for a
// server of driver's family; usesDefault says that no source set
// retryExec.
func explain(w io.Writer, p core.Policy, driver string, usesDefault bool) {
	fam := family.Of(driver)
	if p.Statement.Len() == 0 {
		fmt.Fprintln(w, "statement rules: none, so no statement is retried (retryExec is set to nothing; without any retryExec the default rule "+
			config.DefaultRetryExec+" applies)")
		fmt.Fprintln(w, connectionLine(p, fam))
		return
	}
	if usesDefault {
		fmt.Fprintln(w, defaultRuleLine)
	}
	for _, line := range classLines(p, driver) {
		fmt.Fprintln(w, line)
	}
	waitTable(w, p.Statement.Rules(), p)
	switch p.Jitter {
	case core.JitterFull:
		fmt.Fprintln(w, "jitter full: each wait is a random time up to the wait shown")
	case core.JitterEqual:
		fmt.Fprintln(w, "jitter equal: each wait is a random time between half the wait shown and the wait")
	}
	fmt.Fprintln(w, connectionLine(p, fam))
}

// waitTable prints, for each rule, the wait before each retry, the time
// elapsed in waits so far, and the retries that p's queryTimeout refuses.
func waitTable(w io.Writer, rules []core.Rule, p core.Policy) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "token\tretry\twait\telapsed\tfilter\tnote")
	for _, r := range rules {
		filter := strings.Join(r.Filter(), ",")
		if filter == "" {
			filter = "(every statement)"
		}
		if r.Count() == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t%s\tcount 0: never retried\n", r.Token(), filter)
			continue
		}
		var (
			total   time.Duration
			refused bool // an earlier retry was refused: the loop stopped there
		)
		for i, wait := range r.WaitTimes() {
			total = addSaturating(total, wait)
			note := ""
			switch {
			case refused:
				note = "never reached: an earlier wait is refused"
			case p.RefusesWait(wait):
				note = "refused: wait > queryTimeout (ErrInvalidRetryInterval)"
				refused = true
			}
			fmt.Fprintf(tw, "%s\t%d\t%v\t%s\t%s\t%s\n", r.Token(), i+1, wait, formatTotal(total), filter, note)
		}
	}
	tw.Flush()
}

// connectionLine tells the connection loop's settings in effect for a
// server of family fam, the defaults filled in: what check and explain
// both print.
func connectionLine(p core.Policy, fam family.Family) string {
	return fmt.Sprintf("connection: %s; connectRetryCount %s, connectRetryInterval %v, loginTimeout %v",
		connSummary(p.Connection, fam), retryCount(p.ConnectRetryCount), orDefault(p.ConnectRetryInterval, limits.DefaultConnectRetryInterval),
		orDefault(p.LoginTimeout, limits.DefaultLoginTimeout))
}

// addSaturating adds two non-negative durations, stopping at the largest
// one instead of overflowing (255 waits at limits.MaxWait exceed it).
func addSaturating(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func formatTotal(d time.Duration) string {
	if d == math.MaxInt64 {
		return "more than " + time.Duration(math.MaxInt64).Truncate(time.Hour).String()
	}
	return d.String()
}

func retryCount(n int) string {
	switch {
	case n == 0:
		return "1"
	case n < 0:
		return "0 (off)"
	}
	return fmt.Sprint(n)
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// scrubber replaces the secrets of a DSN in everything written through
// it.
type scrubber struct {
	w       io.Writer
	secrets *strings.Replacer
}

// scrub returns w, or when dsn has secrets a writer that masks them.
func scrub(w io.Writer, dsn string) io.Writer {
	secrets := redact.Secrets(dsn)
	// The longest first: the replacer tries its pairs in order.
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	var pairs []string
	for _, s := range secrets {
		if len(s) >= 3 { // a shorter one would mask ordinary text; quoting sites redact it anyway
			pairs = append(pairs, s, redact.Mask)
		}
	}
	if len(pairs) == 0 {
		return w
	}
	return scrubber{w: w, secrets: strings.NewReplacer(pairs...)}
}

// Write writes p with the secrets masked. It reports len(p) written when
// the masked text is, as the caller's bytes are all accounted for.
func (s scrubber) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, s.secrets.Replace(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
