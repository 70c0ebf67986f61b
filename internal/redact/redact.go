// Package redact hides the secrets of a DSN before it is quoted in an
// error or printed: the password of URL userinfo (sqlserver://, mysql://,
// postgres://) and of the go-sql-driver/mysql form (user:pass@tcp(h)/db),
// and the value of every key that names a password, a secret or a token
// (password=, pwd=, sslpassword=, accessToken=, clientSecret=, …) in the
// URL query, ADO, ODBC, MySQL and PostgreSQL key=value forms. It is the one
// implementation behind config's errors and cmd/crl's messages.
//
// Redaction errs on the side of hiding too much: where a form is
// ambiguous, a value runs at least as far as any of the drivers would read
// it.
package redact

import (
	"net/url"
	"strings"
)

// Mask replaces every redacted secret, as url.URL.Redacted does.
const Mask = "xxxxx"

// Form is how a DSN is written; it decides where a value ends.
type Form int

// The forms of a DSN. FormGuess tells the form from the text.
const (
	FormGuess    Form = iota
	FormURL           // scheme://user:pass@host/path?key=value&key=value
	FormADO           // key=value;key="value";…  (go-mssqldb)
	FormODBC          // odbc:key=value;key={value};…
	FormMySQL         // user:pass@tcp(host)/db?key=value&…
	FormKeyValue      // key=value key='value' …  (libpq, pgx)
)

// DSN returns dsn with its secrets replaced by Mask. It never fails:
// text that is no DSN at all comes back with only what looks like a
// secret hidden.
func DSN(dsn string) string { return In(dsn, FormGuess) }

// In is DSN for a DSN, or a piece of one, known to be of form f.
func In(s string, f Form) string {
	out, _ := redact(s, f)
	return out
}

// Secrets returns the secrets that DSN hides (as written, and as a driver
// would decode them), for a caller that must also scrub text it did not
// build from the DSN itself.
func Secrets(dsn string) []string {
	_, found := redact(dsn, FormGuess)
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, s := range found {
		add(s)
		if u, err := url.PathUnescape(s); err == nil {
			add(u)
		}
		if len(s) >= 2 && strings.ContainsRune(`"'{`, rune(s[0])) {
			add(s[1 : len(s)-1])
		}
	}
	return out
}

// guess tells the form of s from its text.
func guess(s string) Form {
	t := strings.TrimSpace(s)
	switch {
	case schemeEnd(t) > 0:
		return FormURL
	case len(t) >= 5 && strings.EqualFold(t[:5], "odbc:"):
		return FormODBC
	case startsWithKey(t):
		if hasBareSemicolon(t) {
			return FormADO
		}
		return FormKeyValue
	}
	return FormMySQL
}

// schemeEnd returns the index just after "://" when s starts with a URL
// scheme (jdbc:sqlserver:// included), else 0.
func schemeEnd(s string) int {
	i := strings.Index(s, "://")
	if i <= 0 {
		return 0
	}
	for j := 0; j < i; j++ {
		c := s[j]
		if !isAlnum(c) && c != '+' && c != '.' && c != '-' && c != ':' {
			return 0
		}
	}
	return i + 3
}

// knownScheme reports a scheme of the URL DSNs of the drivers crl runs
// on, where text before "://" is a scheme and not a MySQL user name.
func knownScheme(scheme string) bool {
	switch strings.ToLower(strings.TrimPrefix(strings.ToLower(scheme), "jdbc:")) {
	case "sqlserver", "mysql", "mariadb", "postgres", "postgresql":
		return true
	}
	return false
}

// startsWithKey reports whether s starts with key= (an ADO key may hold
// spaces: user id=sa).
func startsWithKey(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '=':
			return i > 0
		case isKeyChar(c) || c == ' ' || c == '\t':
		default:
			return false
		}
	}
	return false
}

// hasBareSemicolon reports a ';' outside quotes and braces: the ADO
// separator, where a key=value DSN holds ';' only inside a value.
func hasBareSemicolon(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ';':
			return true
		case '\'', '"', '{':
			i = atomEnd(s, i) - 1
		}
	}
	return false
}

// redact returns s with its secrets masked, and the secrets.
func redact(s string, f Form) (string, []string) {
	if f == FormGuess {
		f = guess(s)
	}
	var (
		b     strings.Builder
		found []string
		from  int // the part of s not yet written
	)
	mask := func(start, end int) {
		if end <= start {
			return
		}
		found = append(found, s[start:end])
		b.WriteString(s[from:start])
		b.WriteString(Mask)
		from = end
	}
	pairsFrom := 0
	switch f {
	case FormURL:
		lead := len(s) - len(strings.TrimLeft(s, " \t\r\n"))
		if end := schemeEnd(s[lead:]); end > 0 {
			rest := lead + end
			if at := userinfoEnd(s[rest:], false); at >= 0 {
				urlAt := rest + at // the '@' that ends the userinfo, as a URL reads it
				if knownScheme(s[lead : lead+end-3]) {
					if colon := strings.IndexByte(s[rest:urlAt], ':'); colon >= 0 {
						mask(rest+colon+1, urlAt)
					}
				} else {
					// app://x:y@db/shop may also be a MySQL DSN of user app
					// whose password is "//x:y" (go-sql-driver/mysql reads
					// up to the last '@' before the last '/'): hide all
					// that either reading calls a password, from the first
					// '/' on.
					last := urlAt
					if myAt := userinfoEnd(s[lead:], true); myAt >= 0 {
						last = max(last, lead+myAt)
					}
					mask(lead+end-2, last)
					urlAt = last
				}
				pairsFrom = urlAt
			}
		}
	case FormMySQL:
		if at := userinfoEnd(s, true); at >= 0 {
			if colon := strings.IndexByte(s[:at], ':'); colon >= 0 {
				mask(colon+1, at)
			}
			pairsFrom = at
		}
	}
	for i := pairsFrom; i < len(s); {
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			break
		}
		eq += i
		if !secretKey(keyBefore(s, i, eq)) {
			i = eq + 1
			continue
		}
		start := eq + 1
		for start < len(s) && isSpace(s[start]) {
			start++
		}
		end := valueEnd(s, start, f)
		mask(start, end)
		i = max(end, eq+1)
	}
	if from == 0 {
		return s, nil
	}
	b.WriteString(s[from:])
	return b.String(), found
}

// userinfoEnd returns the index of the '@' that ends the userinfo of s
// (the text after a URL's "://", or a MySQL DSN), or -1. A password may
// hold '@' and '/', so it is the last '@' before the first '/' after the
// first '@' (for MySQL, as the driver reads it, before the last '/');
// where that finds an '@' of the query, more is hidden than needed,
// never less.
func userinfoEnd(s string, mysql bool) int {
	first := strings.IndexByte(s, '@')
	if first < 0 {
		return -1
	}
	bound := len(s)
	if mysql {
		if slash := strings.LastIndexByte(s, '/'); slash > first {
			bound = slash
		}
	} else if slash := strings.IndexByte(s[first:], '/'); slash >= 0 {
		bound = first + slash
	}
	return strings.LastIndexByte(s[:bound], '@')
}

// keyBefore returns the key that ends at the '=' at eq: the key
// characters before it, white space between them and '=' skipped, not
// reaching back before from.
func keyBefore(s string, from, eq int) string {
	end := eq
	for end > from && isSpace(s[end-1]) {
		end--
	}
	start := end
	for start > from && isKeyChar(s[start-1]) {
		start--
	}
	return s[start:end]
}

// secretKeySuffixes end the names of the keys whose values are secrets,
// compared lower-case without '_', '-' and '.': password, pwd, passwd,
// sslpassword, accesstoken, access_token, clientsecret, client-secret….
// mysql's allowCleartextPasswords ends in "passwords" and is no secret.
var secretKeySuffixes = [...]string{"password", "passwd", "pwd", "secret", "token"}

// secretKey reports whether key names a secret.
func secretKey(key string) bool {
	if key == "" {
		return false
	}
	k := strings.ToLower(key)
	k = strings.NewReplacer("_", "", "-", "", ".", "").Replace(k)
	if k == "pass" {
		return true
	}
	for _, suffix := range secretKeySuffixes {
		if strings.HasSuffix(k, suffix) {
			return true
		}
	}
	return false
}

// valueEnd returns the index just after the value starting at i, read so
// that it runs at least as far as the drivers of form f read it: up to
// the separator of the form (';' for ADO and ODBC, '&' or '#' for a URL
// or MySQL query, white space before the next key for key=value), with
// quoted ('…' with backslash escapes, "…" with "" escapes) and braced
// ({…} with }} escapes) parts skipped whole, and a backslash escaping the
// byte after it.
func valueEnd(s string, i int, f Form) int {
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\'' || c == '"' || c == '{':
			i = atomEnd(s, i)
			continue
		case c == '\\':
			i += 2
			continue
		case separates(s, i, f):
			return i
		}
		i++
	}
	return len(s)
}

// separates reports whether s[i] ends a bare value of form f.
func separates(s string, i int, f Form) bool {
	c := s[i]
	switch f {
	case FormADO, FormODBC:
		return c == ';'
	case FormURL, FormMySQL:
		return c == '&' || c == '#'
	}
	// key=value: white space ends a value only before another key=, so
	// that a space inside an unquoted value of a one-pair ADO string
	// (taken for key=value) does not cut it short.
	if !isSpace(c) {
		return false
	}
	j := i
	for j < len(s) && isSpace(s[j]) {
		j++
	}
	k := j
	for k < len(s) && isKeyChar(s[k]) {
		k++
	}
	for k < len(s) && isSpace(s[k]) {
		k++
	}
	return j == len(s) || (k > j && k < len(s) && s[k] == '=')
}

// atomEnd returns the index after the quoted or braced part that starts
// at s[i], or len(s) when it is not closed.
func atomEnd(s string, i int) int {
	open := s[i]
	closing := open
	if open == '{' {
		closing = '}'
	}
	for j := i + 1; j < len(s); j++ {
		switch {
		case open == '\'' && s[j] == '\\':
			j++
		case s[j] == closing:
			if open != '\'' && j+1 < len(s) && s[j+1] == closing {
				j++ // "" and }} escape one
				continue
			}
			return j + 1
		}
	}
	return len(s)
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isKeyChar(c byte) bool { return isAlnum(c) || c == '_' || c == '-' || c == '.' }

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'
}
