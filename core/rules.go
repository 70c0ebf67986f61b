package core

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/crl-go/crl/internal/text/quote"
	"github.com/crl-go/crl/internal/text/sqlscan"

	"github.com/crl-go/crl/internal/tables/family"
	"github.com/crl-go/crl/internal/tables/keywords"
	"github.com/crl-go/crl/internal/tables/limits"
)

// Rule is one compiled statement rule for one error token: how many retries,
// the waits before each, and the query filter. It is immutable.
type Rule struct {
	tok     token
	count   int
	initial time.Duration
	op      byte          // '+' or '*'
	change  time.Duration // the additive change, for '+'
	factor  float64       // the factor, for '*'
	waits   []time.Duration
	filter  []string // lower-case keywords; nil matches every statement
}

// Count returns the retry count: how many retries after the first failure.
func (r Rule) Count() int { return r.count }

// Token returns the error token the rule is for, as written in a rule:
// an error number, a SQLSTATE, or a class (deadlock, serialization,
// lockTimeout, failover, throttle, timeout, badconn).
func (r Rule) Token() string { return r.tok.String() }

// Errors returns the error tokens (numbers or SQLSTATEs, as rules write
// them) that the rule stands for on the family of the database/sql
// driver driverName: its own token for a number or a SQLSTATE; for a
// class, the family's errors of the class, in the family table's order
// (for timeout, the server's execution cut-offs, besides any attempt that
// ran out of its time); none for badconn (a broken connection has no
// number) or for a class on a driver whose family crl does not know.
func (r Rule) Errors(driverName string) []string {
	c := classOf(r.tok)
	switch {
	case c == nil:
		return []string{r.tok.String()}
	case c.errors == nil:
		return nil
	}
	return append([]string(nil), c.errors(family.Of(driverName).Profile())...)
}

// WaitTimes returns the wait before each retry, one per retry: len is the
// retry count. The slice is a copy.
func (r Rule) WaitTimes() []time.Duration {
	return append([]time.Duration(nil), r.waits...)
}

// Filter returns the rule's query filter words, lower-cased (nil: none).
func (r Rule) Filter() []string { return append([]string(nil), r.filter...) }

// Matches reports whether the rule applies to the statement: true when the
// rule has no filter, or when the statement's first keyword (after white
// space, comments and opening parentheses), lower-cased, equals one of the
// filter words. It does not allocate.
func (r Rule) Matches(query string) bool { return r.matches(query) }

// matches is Matches without copying the rule.
func (r *Rule) matches(query string) bool {
	if len(r.filter) == 0 {
		return true
	}
	kw := FirstKeyword(query)
	for _, w := range r.filter {
		if equalFoldASCII(kw, w) {
			return true
		}
	}
	return false
}

// wait returns the wait before retry i (0-based).
func (r *Rule) wait(i int) time.Duration {
	if i < len(r.waits) {
		return r.waits[i]
	}
	return limits.MaxWait
}

// String prints the rule in a form that ParseStatementRules reads back to
// the same rule.
func (r Rule) String() string {
	var b strings.Builder
	b.WriteByte('{')
	b.WriteString(r.tok.String())
	b.WriteByte(':')
	b.WriteString(strconv.Itoa(r.count))
	b.WriteByte(',')
	b.WriteString(formatTime(r.initial))
	b.WriteByte(r.op)
	if r.op == '*' {
		b.WriteString(strconv.FormatFloat(r.factor, 'f', -1, 64))
	} else {
		b.WriteString(formatTime(r.change))
	}
	if len(r.filter) > 0 {
		b.WriteByte(':')
		b.WriteString(strings.Join(r.filter, ","))
	}
	b.WriteByte('}')
	return b.String()
}

// formatTime prints a duration so that limits.ParseTime reads it back exactly.
func formatTime(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	return d.String()
}

// StatementRules is a compiled retryExec value: one Rule per error token,
// later rules for the same token replacing earlier ones. The zero value has
// no rules (no statement is retried). It is immutable and safe for
// concurrent use.
type StatementRules struct {
	byToken map[token]*Rule
	// What mayRetry answers from, found once: some rule with retries
	// matches every statement (unfiltered); else the filter words of
	// the rules with retries (words).
	unfiltered bool
	words      []string
}

// Lookup returns the rule for a server error number (or an all-digit
// SQLSTATE): the rule naming the number, else the rule of a class that
// holds it, the number read as SQL Server's (the JDBC driver's numbers;
// LookupError reads an error of any family). A number no rule can name
// (a negative one) has no rule. It does not allocate.
func (s StatementRules) Lookup(errorNumber int32) (Rule, bool) {
	t, ok := numberToken(errorNumber)
	if !ok {
		return Rule{}, false
	}
	r, ok := s.byToken[t]
	if !ok {
		r, ok = s.byToken[meanings[familyToken{familyOfNumbered, t}]]
	}
	if !ok {
		return Rule{}, false
	}
	return *r, true
}

// LookupError returns the rule the statement loop applies to err: the
// rule naming its number or SQLSTATE, else the rule of its class on the
// family its driver's error type tells (1213 is a deadlock from
// go-sql-driver/mysql, 1205 one from go-mssqldb), else timeout's or
// badconn's when err is one.
func (s StatementRules) LookupError(err error) (Rule, bool) {
	if err == nil {
		return Rule{}, false
	}
	facts := factsOf(err, false)
	r := s.lookup(&facts)
	if r == nil {
		return Rule{}, false
	}
	return *r, true
}

// numberToken is the token of an error number, the one place that decides
// which numbers a rule can name: 0 and up. A negative number must not reach
// the table, where negative keys are the named conditions.
func numberToken(n int32) (token, bool) {
	if n < 0 {
		return 0, false
	}
	return token(n), true
}

// lookup finds the rule for a classified error: its number first, then
// its SQLSTATE, then its class by meaning on its family (the error's
// shape tells the family), then the named conditions. A number or
// SQLSTATE that a rule names wins over a class that holds it, wherever
// the rules stand in the value.
func (s StatementRules) lookup(c *errorFacts) *Rule {
	if len(s.byToken) == 0 {
		return nil
	}
	if t, ok := numberToken(c.number); ok && c.hasNumber {
		if r, ok := s.byToken[t]; ok {
			return r
		}
	}
	if c.state != 0 {
		if r, ok := s.byToken[c.state]; ok {
			return r
		}
	}
	if m := c.meaning(); m != 0 {
		if r, ok := s.byToken[m]; ok {
			return r
		}
	}
	if c.timeout {
		if r, ok := s.byToken[tokenTimeout]; ok {
			return r
		}
	}
	if r, ok := s.byToken[tokenBadConn]; ok && c.badConn() { // the last check: it walks the chain
		return r
	}
	return nil
}

// Len returns the number of error tokens that have a rule.
func (s StatementRules) Len() int { return len(s.byToken) }

// Rules returns the rules, ordered by token.
func (s StatementRules) Rules() []Rule {
	out := make([]Rule, 0, len(s.byToken))
	for _, t := range sortedTokens(s.byToken) {
		out = append(out, *s.byToken[t])
	}
	return out
}

// String prints the rules, one {…} per token separated by ';', in a form
// that ParseStatementRules reads back to the same rules.
func (s StatementRules) String() string {
	rules := s.Rules()
	parts := make([]string, len(rules))
	for i, r := range rules {
		parts[i] = r.String()
	}
	return strings.Join(parts, ";")
}

func sortedTokens[V any](m map[token]V) []token {
	ts := make([]token, 0, len(m))
	for t := range m {
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	return ts
}

// ParseStatementRules compiles a retryExec value such as
// {1205,1222:3,2*2:select,update}. Rules are separated by ';', each may be
// wrapped in braces, and white space around any token is ignored. An empty
// value (or "{}") has no rules. Every error names the rule and the token.
func ParseStatementRules(s string) (StatementRules, error) {
	out := StatementRules{}
	prev := "" // the body of the rule before, for the hint of a rule cut off by ';'
	err := eachRule(s, func(raw, body string) error {
		rule, toks, err := parseStatementRule(raw, body, prev)
		if err != nil {
			return err
		}
		prev = body
		if out.byToken == nil {
			out.byToken = make(map[token]*Rule)
		}
		for _, t := range toks {
			r := rule
			r.tok = t
			out.byToken[t] = &r
		}
		return nil
	})
	if err != nil {
		return StatementRules{}, err
	}
	out.summarise()
	return out, nil
}

// summarise finds what mayRetry answers from.
func (s *StatementRules) summarise() {
	for _, r := range s.byToken {
		switch {
		case r.count == 0:
		case len(r.filter) == 0:
			s.unfiltered, s.words = true, nil
			return
		default:
			for _, w := range r.filter {
				if !slices.Contains(s.words, w) {
					s.words = append(s.words, w)
				}
			}
		}
	}
}

// mayRetry reports whether some rule could retry an error of query: a
// rule with retries whose filter matches it. False means that no error
// of query is retried, whatever it is. It does not allocate, and inlines
// (Retrier.WantsFirstRow, on the path of every query whose answer no memo
// holds: WantsFirstRowMemo): rules that name no statement answer without
// a call.
func (s *StatementRules) mayRetry(query string) bool {
	return s.unfiltered || s.mayRetryFiltered(query)
}

// mayRetryFiltered is mayRetry for rules whose filters name statements.
func (s *StatementRules) mayRetryFiltered(query string) bool {
	if len(s.words) == 0 {
		return false
	}
	kw := FirstKeyword(query)
	for _, w := range s.words {
		if equalFoldASCII(kw, w) {
			return true
		}
	}
	return false
}

// eachRule checks the braces of a rule value and calls f with each rule
// that is not empty, as written (raw) and without its braces (body),
// until f fails.
func eachRule(s string, f func(raw, body string) error) error {
	if err := checkBraces(s); err != nil {
		return err
	}
	for _, raw := range splitRules(s) {
		body, err := ruleBody(raw)
		if err != nil {
			return err
		}
		if body == "" {
			continue
		}
		if err := f(raw, body); err != nil {
			return err
		}
	}
	return nil
}

// parseStatementRule compiles one rule; prev is the body of the rule
// before it in the value ("" for the first).
func parseStatementRule(raw, body, prev string) (Rule, []token, error) {
	sections := strings.Split(body, ":")
	switch {
	case len(sections) == 1:
		return Rule{}, nil, timingsError(raw, body, prev)
	case len(sections) > 3:
		return Rule{}, nil, &RuleError{Rule: raw, Err: ErrInvalidRuleFormat,
			Reason: strconv.Itoa(len(sections)) + " sections separated by ':', expected at most 3: errors:timings:filter"}
	}
	toks, err := parseTokens(raw, sections[0], false)
	if err != nil {
		return Rule{}, nil, err
	}
	r := Rule{op: '+', change: defaultChange}
	timings := strings.Split(sections[1], ",")
	if len(timings) > 2 {
		return Rule{}, nil, numberError(raw, sqlscan.TrimSpace(sections[1]),
			"has "+strconv.Itoa(len(timings)-1)+" commas, expected count[,initial[op change]] with at most one comma")
	}
	countTok := sqlscan.TrimSpace(timings[0])
	n, convErr := strconv.Atoi(countTok)
	if !isDigits(countTok) || convErr != nil || n > limits.MaxRetryCount {
		return Rule{}, nil, numberError(raw, countTok, "is not a retry count, expected a whole number from 0 to 255")
	}
	r.count = n
	if len(timings) == 2 {
		if err := parseTimings(raw, sqlscan.TrimSpace(timings[1]), &r); err != nil {
			return Rule{}, nil, err
		}
	}
	if len(sections) == 3 {
		f, err := parseFilter(raw, sections[2])
		if err != nil {
			return Rule{}, nil, err
		}
		r.filter = f
	}
	r.waits = waitSchedule(r.count, r.initial, r.op, r.change, r.factor)
	return r, toks, nil
}

// timingsError reports a statement rule without timings (body, as
// written in raw). When its words are filter words rather than errors,
// the rule is most likely a filter cut off by ';' ({1213:3,2*2:select;update}),
// and the message says how to write it, from prev, the rule before it.
func timingsError(raw, body, prev string) error {
	e := &RuleError{Rule: raw, Err: ErrInvalidRuleFormat,
		Reason: "a statement rule needs timings, expected {errors:count[,initial[op change]][:filter]} such as {1205:3,2*2}"}
	words := strings.Split(body, ",")
	for i, w := range words {
		words[i] = sqlscan.TrimSpace(w)
	}
	prevSections := strings.Split(prev, ":")
	prevFilter := ""
	if len(prevSections) == 3 {
		prevFilter = sqlscan.TrimSpace(prevSections[2])
	}
	afterFilter := prevFilter != "" && prevFilter != "0" // 0 is no filter
	if !filterWords(words, afterFilter) {
		return e
	}
	list := strings.Join(words, ",")
	e.Token = list
	switch {
	case afterFilter:
		e.Reason += "; " + strconv.Quote(list) + " follows a rule with a filter: ';' separates rules and ',' separates filter words, so write {" +
			sqlscan.TrimSpace(prev) + "," + list + "}"
	case len(prevSections) == 2:
		e.Reason += "; " + strconv.Quote(list) + " reads as a filter: ';' separates rules and ':' starts a rule's filter, so write {" +
			sqlscan.TrimSpace(prev) + ":" + list + "}"
	default:
		e.Reason += "; " + strconv.Quote(list) + " reads as a filter: a rule's filter follows its timings after ':', such as {1205:3,2*2:" + list + "}"
	}
	return e
}

// filterWords reports words that read as a query filter rather than as
// errors: every one a statement keyword, or, after a rule with a filter
// (afterFilter), every one a word that is no error token (a procedure's
// name may be a filter word too).
func filterWords(words []string, afterFilter bool) bool {
	for _, w := range words {
		if keywords.Is(w) {
			continue
		}
		if _, err := parseToken(w); !afterFilter || err == nil || !isWord(w) {
			return false
		}
	}
	return true
}

// isWord reports a word a filter takes: word bytes only, at least one.
func isWord(w string) bool {
	for i := 0; i < len(w); i++ {
		if !isWordByte(w[i]) {
			return false
		}
	}
	return w != ""
}

// parseTimings reads initial[op change] into r.
func parseTimings(raw, t string, r *Rule) error {
	opAt := strings.IndexAny(t, "*+")
	if opAt < 0 {
		d, err := limits.ParseTime(t)
		if err != nil {
			return numberError(raw, t, err.Error())
		}
		r.initial = d
		return nil
	}
	if strings.Count(t, "*")+strings.Count(t, "+") > 1 {
		return numberError(raw, t, "has more than one operator, expected initial, initial+change or initial*factor")
	}
	initTok := sqlscan.TrimSpace(t[:opAt])
	changeTok := sqlscan.TrimSpace(t[opAt+1:])
	d, err := limits.ParseTime(initTok)
	if err != nil {
		return numberError(raw, initTok, err.Error())
	}
	r.initial = d
	r.op = t[opAt]
	if r.op == '*' {
		if changeTok == "" {
			// JDBC: an omitted factor equals the initial wait in seconds.
			r.factor = d.Seconds()
			return nil
		}
		f, err := parseFactor(changeTok)
		if err != nil {
			return numberError(raw, changeTok, err.Error())
		}
		r.factor = f
		return nil
	}
	if changeTok == "" {
		r.change = defaultChange
		return nil
	}
	c, err := limits.ParseTime(changeTok)
	if err != nil {
		return numberError(raw, changeTok, err.Error())
	}
	r.change = c
	return nil
}

func parseFilter(raw, f string) ([]string, error) {
	if t := sqlscan.TrimSpace(f); t == "0" && f != "0" {
		// JDBC reads only a bare 0 as "no filter"; "{1205:3: 0}" keeps the
		// filter " 0", which matches almost no statement. Neither meaning
		// is safe to guess.
		return nil, &RuleError{Rule: raw, Token: f, Err: ErrInvalidRuleFormat,
			Reason: strconv.Quote(f) + " is 0 with white space, which the JDBC driver reads as the filter " +
				strconv.Quote(f) + ", expected 0 (no filter) or keywords such as select,update"}
	}
	f = sqlscan.TrimSpace(f)
	if f == "" || f == "0" { // JDBC writes an omitted filter as 0
		return nil, nil
	}
	words := strings.Split(f, ",")
	out := make([]string, 0, len(words))
	for _, w := range words {
		w = sqlscan.TrimSpace(w)
		if !isWord(w) {
			return nil, &RuleError{Rule: raw, Token: w, Err: ErrInvalidRuleFormat,
				Reason: strconv.Quote(w) + " is not a keyword, expected a filter such as select,update"}
		}
		out = append(out, strings.ToLower(w))
	}
	return out, nil
}

// parseTokens reads a comma-separated error list. For a connection rule a
// leading '+' is allowed and reported.
func parseTokens(raw, list string, conn bool) ([]token, error) {
	list = sqlscan.TrimSpace(list)
	parts := strings.Split(list, ",")
	out := make([]token, 0, len(parts))
	for i, p := range parts {
		p = sqlscan.TrimSpace(p)
		if conn && i == 0 && strings.HasPrefix(p, "+") {
			p = sqlscan.TrimSpace(p[1:])
		}
		t, err := parseToken(p)
		if err != nil {
			return nil, numberError(raw, p, err.Error())
		}
		out = append(out, t)
	}
	return out, nil
}

func numberError(raw, tok, reason string) error {
	if !strings.HasPrefix(reason, strconv.Quote(tok)) {
		reason = strconv.Quote(tok) + " " + reason
	}
	return &RuleError{Rule: raw, Token: tok, Reason: reason, Err: ErrInvalidParameterNumber}
}

// splitRules splits a value on ';' into rules as written.
func splitRules(s string) []string {
	parts := strings.Split(s, ";")
	out := parts[:0]
	for _, p := range parts {
		if sqlscan.TrimSpace(p) != "" {
			out = append(out, sqlscan.TrimSpace(p))
		}
	}
	return out
}

// checkBraces reports braces that do not pair up across the whole value:
// a closing brace without an opening one, an opening brace never closed,
// or one nested in another. A value cut off mid-way ("{1205:3",
// "{1205,1222:3,2*2:sel") must not parse as if it were whole.
func checkBraces(s string) error {
	depth, opened := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
			opened = i
			if depth > 1 {
				return &RuleError{Rule: s, Token: "{", Err: ErrInvalidRuleFormat,
					Reason: "a brace inside braces at " + strconv.Quote(abbreviate(s[i:])) +
						", expected braces only around a rule or around the whole list"}
			}
		case '}':
			depth--
			if depth < 0 {
				return &RuleError{Rule: s, Token: "}", Err: ErrInvalidRuleFormat,
					Reason: "a closing brace without an opening one at " + strconv.Quote(abbreviate(s[i:])) +
						", expected {rule} or {rule;rule}"}
			}
		}
	}
	if depth > 0 {
		return &RuleError{Rule: s, Token: "{", Err: ErrInvalidRuleFormat,
			Reason: "the brace opened at " + strconv.Quote(abbreviate(s[opened:])) +
				" is not closed (is the value cut off?), expected {rule} or {rule;rule}"}
	}
	return nil
}

// abbreviate shortens s for an error message.
func abbreviate(s string) string { return quote.Abbreviate(s, 24) }

// ruleBody strips one optional leading '{' and one optional trailing '}'
// (a list may be wrapped whole, so "{1205:3;1222:2}" splits into "{1205:3"
// and "1222:2}"). A brace anywhere else is an error.
func ruleBody(raw string) (string, error) {
	b := sqlscan.TrimSpace(raw)
	b = strings.TrimPrefix(b, "{")
	b = strings.TrimSuffix(b, "}")
	if strings.ContainsAny(b, "{}") {
		return "", &RuleError{Rule: raw, Err: ErrInvalidRuleFormat,
			Reason: "a brace inside a rule, expected braces only around a rule or around the whole list"}
	}
	return sqlscan.TrimSpace(b), nil
}

// ConnectionRules is a compiled retryConn value: the errors that the
// connection loop retries. The zero value retries the builtin list
// (TransientErrors, SQL Server's errors; nothing for another server). A value in which any rule lacks the '+' prefix replaces
// the builtin list; otherwise its errors are added to it. It is immutable
// and safe for concurrent use.
type ConnectionRules struct {
	replace bool
	set     map[token]struct{}
}

// transientErrors is the JDBC driver's builtin list of transient login
// errors.
var transientErrors = [...]int32{64, 233, 4060, 4221, 10053, 10054, 10928, 10929,
	40020, 40143, 40166, 40197, 40501, 40540, 40613, 42108, 42109, 49918, 49919, 49920}

// TransientErrors returns the builtin list of transient connection errors,
// the 20 numbers of the JDBC driver. The slice is a copy.
func TransientErrors() []int32 {
	out := make([]int32, len(transientErrors))
	copy(out, transientErrors[:])
	return out
}

func isTransient(n int32) bool {
	for _, t := range transientErrors {
		if t == n {
			return true
		}
	}
	return false
}

// Retryable reports whether the connection loop retries a login error
// with this number that a SQL Server sent: the builtin list unless
// replaced, plus the listed numbers and the SQL Server numbers of the
// listed classes. (The builtin list holds SQL Server's
// numbers: for a MySQL or PostgreSQL server only the listed errors are
// retried.) (A network failure is retried by the
// connection loop only when the rules list it; see Retrier.Connect.)
func (c ConnectionRules) Retryable(errorNumber int32) bool {
	t, ok := numberToken(errorNumber)
	if !ok {
		return false
	}
	if !c.replace && isTransient(errorNumber) {
		return true
	}
	if _, ok = c.set[t]; ok {
		return true
	}
	m := meanings[familyToken{familyOfNumbered, t}]
	_, ok = c.set[m]
	return ok && m != 0
}

// retryable decides for a classified connection error. The builtin list
// applies only to an error a SQL Server sent (fromServer, and its family's
// family.Profile.TransientList): as in JDBC, whose
// connection loop looks only at server errors, a network failure mapped to
// 10053 or 10054 is retried only when the rules name it; and the list's
// numbers are SQL Server's, so a MySQL error that happens to share one
// (MySQL numbers its errors apart) is not in it.
func (c ConnectionRules) retryable(cl errorFacts, fromServer bool) bool {
	if fromServer && cl.family.Profile().TransientList && cl.hasNumber && !c.replace && isTransient(cl.number) {
		return true
	}
	return c.names(cl) // the listed numbers, whoever sent the error
}

// names reports whether the rules list the error explicitly: its number,
// its SQLSTATE, its class on its family, or a named condition it meets.
func (c ConnectionRules) names(cl errorFacts) bool {
	if t, ok := numberToken(cl.number); cl.hasNumber && ok {
		if _, ok := c.set[t]; ok {
			return true
		}
	}
	for _, t := range [...]token{cl.state, cl.meaning(), tokenTimeout, tokenBadConn} {
		if t == 0 || t == tokenTimeout && !cl.timeout || t == tokenBadConn && !cl.badConn() {
			continue
		}
		if _, ok := c.set[t]; ok {
			return true
		}
	}
	return false
}

// Replaces reports whether the rules replace the builtin list.
func (c ConnectionRules) Replaces() bool { return c.replace }

// String prints the rules in a form that ParseConnectionRules reads back to
// the same rules: "" for the zero value, {+n,...} to append, {n,...} to
// replace.
func (c ConnectionRules) String() string {
	if !c.replace && len(c.set) == 0 {
		return ""
	}
	ts := sortedTokens(c.set)
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.String()
	}
	prefix := "+"
	if c.replace {
		prefix = ""
	}
	return "{" + prefix + strings.Join(parts, ",") + "}"
}

// ParseConnectionRules compiles a retryConn value such as {+4060} or
// {4060;40613}. A rule with timings is ErrInvalidRuleFormat. If any rule
// lacks the '+' prefix, the value replaces the builtin list (the JDBC
// driver's rule). An empty value keeps the builtin list.
func ParseConnectionRules(s string) (ConnectionRules, error) {
	out := ConnectionRules{}
	err := eachRule(s, func(raw, body string) error {
		if strings.Contains(body, ":") {
			return &RuleError{Rule: raw, Err: ErrInvalidRuleFormat,
				Reason: "a connection rule has no timings or filter, expected {[+]errors} such as {+4060}"}
		}
		if !strings.HasPrefix(body, "+") {
			out.replace = true
		}
		toks, err := parseTokens(raw, body, true)
		if err != nil {
			return err
		}
		if err := connClasses(raw, toks); err != nil {
			return err
		}
		if out.set == nil {
			out.set = make(map[token]struct{})
		}
		for _, t := range toks {
			out.set[t] = struct{}{}
		}
		return nil
	})
	if err != nil {
		return ConnectionRules{}, err
	}
	return out, nil
}

// connClasses refuses a class that no login fails with (deadlock,
// serialization, lockTimeout: a statement's errors) in the connection
// rule raw.
func connClasses(raw string, toks []token) error {
	for _, t := range toks {
		if c := classOf(t); c != nil && !c.conn {
			return numberError(raw, t.String(), "is a class of statement errors, which a login never fails with: expected in retryConn an error number, a SQLSTATE, or "+
				classWordsWhere(func(c *errorClass) bool { return c.conn })+" (name it in retryExec)")
		}
	}
	return nil
}
