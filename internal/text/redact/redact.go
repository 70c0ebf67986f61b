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

	"github.com/crl-go/crl/internal/text/dsnlex"
)

// Mask replaces every redacted secret, as url.URL.Redacted does.
const Mask = "xxxxx"

// Form is how a DSN is written; it decides where a value ends. It is the
// DSN lexer's (internal/text/dsnlex).
type Form = dsnlex.Form

// The forms of a DSN. FormGuess tells the form from the text.
const (
	FormGuess    = dsnlex.FormGuess
	FormURL      = dsnlex.FormURL      // scheme://user:pass@host/path?key=value&key=value
	FormADO      = dsnlex.FormADO      // key=value;key="value";…  (go-mssqldb)
	FormODBC     = dsnlex.FormODBC     // odbc:key=value;key={value};…
	FormMySQL    = dsnlex.FormMySQL    // user:pass@tcp(host)/db?key=value&…
	FormKeyValue = dsnlex.FormKeyValue // key=value key='value' …  (libpq, pgx)
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

// redact returns s with its secrets masked, and the secrets.
func redact(s string, f Form) (string, []string) {
	if f == FormGuess {
		f = dsnlex.Guess(s)
	}
	m := masker{s: s}
	start, end, pairsFrom := dsnlex.Password(s, f)
	m.mask(start, end)
	dsnlex.Values(s, pairsFrom, f, secretKey, m.mask)
	if m.from == 0 {
		return s, nil
	}
	m.b.WriteString(s[m.from:])
	return m.b.String(), m.found
}

// masker writes a DSN with parts of it masked, in order.
type masker struct {
	s     string
	b     strings.Builder
	found []string // the masked parts
	from  int      // the part of s not yet written
}

// mask masks s[start:end], which follows the parts masked so far.
func (m *masker) mask(start, end int) {
	if end <= start {
		return
	}
	m.found = append(m.found, m.s[start:end])
	m.b.WriteString(m.s[m.from:start])
	m.b.WriteString(Mask)
	m.from = end
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
