// Package dsnlex is crl's one DSN lexer. config's DSN reader, redact's
// masking and the OpenTelemetry hook read a DSN's text through it, so
// they agree on its forms and where its keys and values start and end;
// each keeps its own decisions (which keys are crl's, what is a secret,
// which attributes to report) over that one reading.
//
// It reads a DSN two ways. Pairs reads it exactly, as its driver does,
// each part with where it stands, so that config takes crl's keys out and
// hands the driver the rest as written. Password, Values and URLs read it
// widely, each value running at least as far as any driver would read
// it, so that what redact hides is never less than a driver takes.
//
// The forms are a URL (scheme://user:pass@host/path?key=value&…),
// go-mssqldb's ADO string (key=value;key="value";…) and its ODBC form
// (odbc:key={value};…), go-sql-driver/mysql's user:pass@tcp(host)/db?…,
// and the key=value form of libpq and pgx (key=value key='value' …).
// Positions are byte indexes into the text read.
package dsnlex

import (
	"strings"

	"github.com/crl-go/crl/internal/tables/family"
)

// Form is how a DSN is written; it decides where a value ends.
type Form int

// The forms of a DSN. FormGuess asks Guess to tell the form from the text.
const (
	FormGuess    Form = iota
	FormURL           // scheme://user:pass@host/path?key=value&key=value
	FormADO           // key=value;key="value";…  (go-mssqldb)
	FormODBC          // odbc:key=value;key={value};…
	FormMySQL         // user:pass@tcp(host)/db?key=value&…
	FormKeyValue      // key=value key='value' …  (libpq, pgx)
)

// Guess tells the form of s from its text: a scheme and "://" make a URL,
// odbc: the ODBC form, a leading key= the ADO form when a ';' stands
// outside quotes and braces (else key=value), anything else MySQL's.
func Guess(s string) Form {
	t := strings.TrimSpace(s)
	switch {
	case schemeEnd(t) > 0:
		return FormURL
	case hasODBCPrefix(t):
		return FormODBC
	case startsWithKey(t):
		if hasBareSemicolon(t) {
			return FormADO
		}
		return FormKeyValue
	}
	return FormMySQL
}

// hasODBCPrefix reports the odbc: prefix of go-mssqldb's ODBC form, in
// any case.
func hasODBCPrefix(s string) bool { return len(s) >= 5 && strings.EqualFold(s[:5], "odbc:") }

// schemeEnd returns the index just after "://" when s starts with a URL
// scheme (jdbc:sqlserver:// included), else 0.
func schemeEnd(s string) int {
	i := strings.Index(s, "://")
	if i <= 0 {
		return 0
	}
	for j := 0; j < i; j++ {
		if !isSchemeChar(s[j]) {
			return 0
		}
	}
	return i + 3
}

// knownScheme reports a scheme of the URL DSNs of the drivers crl runs
// on (family.Profile.Schemes, with or without jdbc:), where text before
// "://" is a scheme and not a MySQL user name.
func knownScheme(scheme string) bool { return family.OfScheme(scheme) != family.Other }

// userinfoEnd returns the index of the '@' that ends the userinfo of s
// (the text after a URL's "://", or a MySQL DSN), or -1. A password may
// hold '@' and '/', so it is the last '@' before the first '/' after the
// first '@' (for MySQL, as go-sql-driver/mysql reads it, before the last
// '/'); where that finds an '@' of the query, it reaches further than
// the userinfo, never less far.
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

// atomEnd returns the index after the quoted or braced part that starts
// at s[i] ('…' with backslash escapes, "…" with "" escapes, {…} with }}
// escapes), or len(s) when it is not closed.
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

// isAlnum reports an ASCII letter or digit.
func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// isKeyChar reports a byte of a key name.
func isKeyChar(c byte) bool { return isAlnum(c) || c == '_' || c == '-' || c == '.' }

// isSchemeChar reports a byte of a URL scheme (jdbc:sqlserver included).
func isSchemeChar(c byte) bool { return isAlnum(c) || c == '+' || c == '.' || c == '-' || c == ':' }
