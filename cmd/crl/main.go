// Command crl validates retry rules and explains what they do.
//
//	crl check   -exec '{1205,1222:3,2*2:select,update}' -conn '{+4060}'
//	crl check   -file mssql-jdbc.properties
//	crl check   -dsn 'sqlserver://h?retryExec={1205:3}&queryTimeout=5'
//	crl explain -exec '{1205,1222:3,2*2:select,update}' [-querytimeout 5]
//
// check exits 0 when everything parses and 1 with an error naming the bad
// value otherwise; explain prints, per error token, the wait before each
// retry, the cumulative time, and whether queryTimeout refuses it.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

const usage = `usage:
  crl check   [-exec RULES] [-conn RULES] [-file PATH] [-dsn DSN -driver NAME]
  crl explain [-exec RULES] [-conn RULES] [-file PATH] [-dsn DSN -driver NAME] [-querytimeout SECONDS]
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// errUsage reports a command line that cannot be understood.
var errUsage = errors.New("crl: bad command line")

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "check" && args[0] != "explain") {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd := args[0]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	exec := fs.String("exec", "", "retryExec rules")
	conn := fs.String("conn", "", "retryConn rules")
	file := fs.String("file", "", "an mssql-jdbc.properties file")
	dsn := fs.String("dsn", "", "a DSN whose retry settings to read")
	driver := fs.String("driver", "sqlserver", "the driver of -dsn: sqlserver, mysql or pgx")
	qt := fs.Float64("querytimeout", -1, "queryTimeout in seconds (-1: not set)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "crl: unexpected argument %q\n%s", fs.Arg(0), usage)
		return 2
	}
	cfg, err := gather(*exec, *conn, *file, *dsn, *driver)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if *qt >= 0 {
		cfg.QueryTimeout = time.Duration(*qt * float64(time.Second))
		if *qt == 0 {
			cfg.QueryTimeout = core.QueryTimeoutZero
		}
	}
	policy, err := cfg.Policy()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	for _, note := range notes(cfg.RetryExec) {
		fmt.Fprintln(stdout, "note:", note)
	}
	if cmd == "check" {
		fmt.Fprintf(stdout, "ok: %d statement rule(s), connection rules %s\n", policy.Statement.Len(), connSummary(policy.Connection))
		return 0
	}
	explain(stdout, policy)
	return 0
}

// gather reads the settings: -exec/-conn over -dsn over -file.
func gather(exec, conn, file, dsn, driver string) (config.Config, error) {
	var opts []config.Option
	if file != "" {
		fc, err := config.ReadProperties(file)
		if err != nil {
			return config.Config{}, err
		}
		opts = append(opts, config.WithConfig(fc))
	}
	if dsn != "" {
		dc, _, err := config.ParseDSN(driver, dsn)
		if err != nil {
			return config.Config{}, err
		}
		opts = append(opts, config.WithConfig(dc))
	}
	if exec != "" {
		opts = append(opts, config.WithRetryExec(exec))
	}
	if conn != "" {
		opts = append(opts, config.WithRetryConn(conn))
	}
	return config.NewConfig(opts...), nil
}

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

func connSummary(c core.ConnectionRules) string {
	switch {
	case c.String() == "":
		return "the builtin list"
	case c.Replaces():
		return c.String() + " (replacing the builtin list)"
	}
	return c.String() + " (added to the builtin list)"
}

func explain(w io.Writer, p core.Policy) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "token\tretry\twait\telapsed\tfilter\tnote")
	for _, r := range p.Statement.Rules() {
		filter := strings.Join(r.Filter(), ",")
		if filter == "" {
			filter = "(every statement)"
		}
		if r.Count() == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t%s\tcount 0: never retried\n", r.Token(), filter)
			continue
		}
		var total time.Duration
		for i, wait := range r.WaitTimes() {
			total += wait
			note := ""
			if qt := p.QueryTimeout; qt != 0 && wait > max(qt, 0) {
				note = "refused: wait > queryTimeout (ErrInvalidRetryInterval)"
			}
			fmt.Fprintf(tw, "%s\t%d\t%v\t%v\t%s\t%s\n", r.Token(), i+1, wait, total, filter, note)
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "connection: %s; connectRetryCount %s, connectRetryInterval %v, loginTimeout %v\n",
		connSummary(p.Connection), retryCount(p.ConnectRetryCount), orDefault(p.ConnectRetryInterval, core.DefaultConnectRetryInterval),
		orDefault(p.LoginTimeout, core.DefaultLoginTimeout))
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
