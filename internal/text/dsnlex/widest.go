package dsnlex

import "strings"

// Password returns where the password of s's userinfo is, s[start:end]
// (start == end: none), for the URL and MySQL forms, read as widely as
// any driver would read it, and where the key=value pairs of s are to be
// looked for from (after the userinfo). An unknown scheme (app://x:y@db/shop)
// may also begin a MySQL DSN of user app whose password is "//x:y"
// (go-sql-driver/mysql reads up to the last '@' before the last '/'):
// then all that either reading calls a password is, from the first '/'
// on.
func Password(s string, f Form) (start, end, pairsFrom int) {
	switch f {
	case FormURL:
		return urlPassword(s)
	case FormMySQL:
		at := userinfoEnd(s, true)
		if at < 0 {
			return 0, 0, 0
		}
		if colon := strings.IndexByte(s[:at], ':'); colon >= 0 {
			return colon + 1, at, at
		}
		return 0, 0, at
	}
	return 0, 0, 0
}

// urlPassword is Password for a URL.
func urlPassword(s string) (start, end, pairsFrom int) {
	lead := len(s) - len(strings.TrimLeft(s, " \t\r\n"))
	schemeLen := schemeEnd(s[lead:])
	if schemeLen == 0 {
		return 0, 0, 0
	}
	rest := lead + schemeLen
	at := userinfoEnd(s[rest:], false)
	if at < 0 {
		return 0, 0, 0
	}
	urlAt := rest + at // the '@' that ends the userinfo, as a URL reads it
	if knownScheme(s[lead : rest-3]) {
		if colon := strings.IndexByte(s[rest:urlAt], ':'); colon >= 0 {
			return rest + colon + 1, urlAt, urlAt
		}
		return 0, 0, urlAt
	}
	last := urlAt
	if myAt := userinfoEnd(s[lead:], true); myAt >= 0 {
		last = max(last, lead+myAt)
	}
	return rest - 2, last, last
}

// Values calls each, in order, with where the value of every key that
// keys accepts is, s[start:end], from index from on, each running as far
// as valueEnd reads it in form f: at least as far as any driver of the
// form reads it. Every '=' may end a key, one inside another key's value
// too, so that no reading of the text finds a key that Values missed.
func Values(s string, from int, f Form, keys func(key string) bool, each func(start, end int)) {
	for i := from; i < len(s); {
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			return
		}
		eq += i
		if !keys(keyBefore(s, i, eq)) {
			i = eq + 1
			continue
		}
		start := skipSpace(s, eq+1)
		end := valueEnd(s, start, f)
		each(start, end)
		i = max(end, eq+1)
	}
}

// URLs calls each, in order, with where every URL that free text s
// quotes is, s[start:end]: from its scheme to the next white space.
func URLs(s string, each func(start, end int)) {
	from := 0 // the end of the last URL
	for i := 0; i < len(s); {
		sep := strings.Index(s[i:], "://")
		if sep < 0 {
			return
		}
		sep += i
		start := sep
		for start > from && isSchemeChar(s[start-1]) {
			start--
		}
		end := sep + 3
		for end < len(s) && !isSpace(s[end]) {
			end++
		}
		if start < sep { // a scheme: a URL
			each(start, end)
			from = end
		}
		i = end
	}
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

// separates reports whether s[i] ends a bare value of form f, for
// valueEnd.
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
	j := skipSpace(s, i)
	k := j
	for k < len(s) && isKeyChar(s[k]) {
		k++
	}
	k = skipSpace(s, k)
	return j == len(s) || (k > j && k < len(s) && s[k] == '=')
}
