package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/internal/tables/keywords"
	"github.com/crl-go/crl/internal/tables/limits"
)

// crl check's bounds on a statement rule's waits (docs/rules.md, "What
// crl check adds"). The statement holds its connection while it waits,
// and its caller waits too.
const (
	// longWait is the longest pause the JDBC driver takes between two
	// attempts of anything (connectRetryInterval's maximum): a longer
	// wait is a warning, with the rule's wait table.
	longWait = limits.MaxConnectInterval
	// maxWait is the longest time-out the JDBC driver takes
	// (loginTimeout's maximum, 65535 s): a longer wait is an error. A
	// connection held that long outlives MySQL's wait_timeout (8 h by
	// default) too.
	maxWait = limits.MaxLoginTimeout
)

// ruleGroup is one rule as written: the compiled rules (one per token)
// that share their count, waits and filter.
type ruleGroup struct {
	tokens []string
	rules  []core.Rule
	tail   string // the rule after its tokens, as String prints it: "3,2s*2:select}"
}

// written prints the group as one rule: {1205,1222:3,2s*2:select}.
func (g ruleGroup) written() string { return "{" + strings.Join(g.tokens, ",") + ":" + g.tail }

// groupRules gathers the rules that differ only by token, in token order.
func groupRules(rules []core.Rule) []ruleGroup {
	var out []ruleGroup
	at := map[string]int{}
	for _, r := range rules {
		_, tail, _ := strings.Cut(r.String(), ":")
		i, ok := at[tail]
		if !ok {
			i = len(out)
			at[tail] = i
			out = append(out, ruleGroup{tail: tail})
		}
		out[i].tokens = append(out[i].tokens, r.Token())
		out[i].rules = append(out[i].rules, r)
	}
	return out
}

// warning is a finding of lint that does not fail crl check: its
// message, and the rules whose wait table goes with it (nil: none).
type warning struct {
	msg   string
	rules []core.Rule
}

// lint finds what parses but cannot work as written in the statement
// rules of p: errors (crl check exits 1) and warnings.
func lint(p core.Policy) (errs []string, warnings []warning) {
	for _, g := range groupRules(p.Statement.Rules()) {
		e, warn := lintFilter(g)
		errs = append(errs, e...)
		for _, msg := range warn {
			warnings = append(warnings, warning{msg: msg})
		}
		if e, warn := lintWaits(g, p); e != "" {
			errs = append(errs, e)
		} else if warn != "" {
			warnings = append(warnings, warning{msg: warn, rules: g.rules})
		}
	}
	return errs, warnings
}

// lintFilter checks each filter word against the statement keywords. A
// word one edit from a keyword (selct) is a misspelling: the rule would
// never fire, an error. Any other word is a warning: it matches only a
// statement that begins with it, which a call of a procedure by its bare
// name does (go-mssqldb sends dbo.Transfer as a procedure call, whose
// first word is dbo), so it may be meant.
func lintFilter(g ruleGroup) (errs, warnings []string) {
	for _, word := range g.rules[0].Filter() {
		if keywords.Is(word) {
			continue
		}
		if k, ok := keywords.Near(word); ok {
			errs = append(errs, fmt.Sprintf("crl: rule %s: the filter word %q is no statement keyword, so the rule fires for no statement: did you mean %s? A filter takes the first keyword of a statement: %s",
				g.written(), word, k, strings.Join(keywords.All(), ", ")))
			continue
		}
		warnings = append(warnings, fmt.Sprintf("rule %s: the filter word %q is no statement keyword: the rule fires only for a statement whose first word is %s, such as a call of a procedure by its bare name (dbo.Transfer begins with dbo); if %s names no procedure or schema, the rule fires for no statement",
			g.written(), word, word, word))
	}
	return errs, warnings
}

// lintWaits checks the waits the statement loop can take (those before
// the first one queryTimeout refuses) against maxWait (an error) and
// longWait (a warning). It names the first retry past the bound.
func lintWaits(g ruleGroup, p core.Policy) (err, warn string) {
	for i, wait := range g.rules[0].WaitTimes() {
		switch {
		case p.RefusesWait(wait):
			return "", warn // the loop stops here: later waits are never taken
		case wait > maxWait:
			return fmt.Sprintf("crl: rule %s: retry %d waits %s, longer than %v (%d s, the longest loginTimeout): the statement would hold its connection that long; lower the initial wait, the change or the count",
				g.written(), i+1, formatWait(wait), maxWait, int64(maxWait/time.Second)), ""
		case wait > longWait && warn == "":
			warn = fmt.Sprintf("rule %s: retry %d waits %s, longer than %v: the statement holds its connection, and its caller waits, that long",
				g.written(), i+1, formatWait(wait), longWait)
		}
	}
	return "", warn
}

// formatWait prints a wait, in seconds too when it is long enough for
// the hours to hide them.
func formatWait(d time.Duration) string {
	if d < time.Hour {
		return d.String()
	}
	return d.String() + " (" + strconv.FormatInt(int64(d/time.Second), 10) + " s)"
}
