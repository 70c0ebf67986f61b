package dsnlex

import (
	"strconv"
	"strings"
)

// Pair is one part of a DSN: a key and its value, or, where a form lets a
// part go without '=', a part that is only text (its text is Key).
type Pair struct {
	// Key is the key. In the ADO, ODBC and key=value forms it is without
	// the white space around it; in the URL and MySQL forms it is as
	// written, percent-encoding included.
	Key string
	// Value is the value. In the ADO, ODBC and key=value forms it is as
	// the key's reader reads it (see Pairs), its quotes, braces and
	// escapes removed; in the URL and MySQL forms it is as written.
	Value string
	Eq    bool // an '=' follows the key
	Bare  bool // the value is neither quoted nor braced
	Start int  // the index of the part's first byte (its key)
	End   int  // the index just after its last (its value), before the separator that ends it
}

// Error is a value of one of the caller's keys (Pairs' ours) that cannot
// be read. Its text quotes none of the DSN, which may hold a secret.
type Error struct {
	Key      string // the key, as Pair.Key
	At       int    // where the fault is: the quote or brace left open, or the text after the closed one
	Unclosed bool   // a quote or brace is not closed; else text follows the closed one before ';'
}

func (e *Error) Error() string {
	if e.Unclosed {
		return "dsnlex: " + e.Key + ": the quote or brace at byte " + strconv.Itoa(e.At) + " is not closed"
	}
	return "dsnlex: " + e.Key + ": text follows the closing quote or brace at byte " + strconv.Itoa(e.At)
}

// Pairs reads the parts of s, a DSN of form f (FormGuess: Guess tells
// it), in order, each with where it stands, so that a caller can drop
// some and keep the rest as written. ours says which keys are the
// caller's own (nil: none): their values are read as crl reads its
// settings, the others as the driver of the form reads its own.
//
//   - ADO and ODBC (after the odbc: prefix): parts split on ';' as
//     go-mssqldb splits them (in the ADO form a double quote toggles
//     quoting; in the ODBC form a value in braces runs to its closing
//     brace, }} escaping one). The value of one of ours is {braced}
//     (nested braces counted, so {{1205:3};{1222:2}} is one value),
//     "quoted" ("" escaping one), or bare up to ';' and trimmed. A part
//     without '=' is text.
//   - URL: the query, after the first '?' up to a '#', split on '&' only
//     (never ';', which rules use).
//   - MySQL: every parameter after a '?' or '&', up to the next of
//     either, so that a value may hold a '/' (a path), which the driver's
//     own parser cannot read.
//   - key=value, as pgx reads it: a value is 'quoted' with backslash
//     escapes, or bare up to white space with a backslash escaping the
//     byte after it; the value of one of ours may also be {braced}. From
//     a part without '=' on, the rest is one part of text.
//
// A value of one of ours that cannot be read ends the reading: Pairs
// returns the parts before it and an *Error. The driver's values are the
// driver's to judge: one whose quote is not closed is the last part.
func Pairs(s string, f Form, ours func(key string) bool) ([]Pair, error) {
	if ours == nil {
		ours = func(string) bool { return false }
	}
	switch f {
	case FormGuess:
		return Pairs(s, Guess(s), ours)
	case FormADO, FormODBC:
		return adoPairs(s, f == FormODBC, ours)
	case FormURL:
		return urlPairs(s), nil
	case FormMySQL:
		return mysqlPairs(s), nil
	}
	return keyValuePairs(s, ours)
}

// adoPairs reads an ADO or ODBC connection string.
func adoPairs(s string, odbc bool, ours func(string) bool) ([]Pair, error) {
	from := 0
	if odbc && hasODBCPrefix(s) {
		from = len("odbc:")
	}
	var out []Pair
	for i := from; i < len(s); {
		p, err := adoPart(s, i, odbc, ours)
		if err != nil {
			return out, err
		}
		out = append(out, p)
		i = p.End + 1
	}
	return out, nil
}

// adoPart reads the part of an ADO or ODBC string that starts at start.
func adoPart(s string, start int, odbc bool, ours func(string) bool) (Pair, error) {
	i, inQuote := adoKeyEnd(s, start, odbc)
	p := Pair{Key: strings.TrimSpace(s[start:i]), Start: start, End: i}
	if i >= len(s) || s[i] == ';' {
		return p, nil
	}
	p.Eq = true
	if !ours(p.Key) {
		p.End = adoDriverValueEnd(s, i+1, odbc, inQuote)
		p.Value = adoDriverValue(s[i+1:p.End], odbc)
		return p, nil
	}
	v := adoValue(s, i+1)
	if v.fault != noFault {
		return Pair{}, &Error{Key: p.Key, At: v.at, Unclosed: v.fault == unclosed}
	}
	p.Value, p.Bare, p.End = v.text, v.bare, v.end
	return p, nil
}

// urlPairs reads the query of a URL.
func urlPairs(s string) []Pair {
	q := strings.IndexByte(s, '?')
	if q < 0 {
		return nil
	}
	end := len(s)
	if h := strings.IndexByte(s[q:], '#'); h >= 0 {
		end = q + h
	}
	var out []Pair
	for i := q + 1; ; {
		j := strings.IndexByte(s[i:end], '&')
		if j < 0 {
			return append(out, queryPair(s, i, end))
		}
		out = append(out, queryPair(s, i, i+j))
		i += j + 1
	}
}

// mysqlPairs reads the parameters of a go-sql-driver/mysql DSN.
func mysqlPairs(s string) []Pair {
	var out []Pair
	sep := strings.IndexAny(s, "?&")
	for sep >= 0 {
		// A parameter ends at the next separator of either kind, so
		// that taking one out never joins its neighbours into a new key.
		end := strings.IndexAny(s[sep+1:], "?&")
		if end < 0 {
			return append(out, queryPair(s, sep+1, len(s)))
		}
		out = append(out, queryPair(s, sep+1, sep+1+end))
		sep += 1 + end
	}
	return out
}

// queryPair is the key=value pair of a URL or MySQL query at s[start:end].
func queryPair(s string, start, end int) Pair {
	k, v, eq := strings.Cut(s[start:end], "=")
	return Pair{Key: k, Value: v, Eq: eq, Start: start, End: end}
}

// keyValuePairs reads a DSN of the key=value form.
func keyValuePairs(s string, ours func(string) bool) ([]Pair, error) {
	var out []Pair
	for i := skipSpace(s, 0); i < len(s); i = skipSpace(s, i) {
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 { // no pair: the driver judges the rest
			return append(out, Pair{Key: strings.TrimSpace(s[i:]), Start: i, End: len(s)}), nil
		}
		p := Pair{Key: strings.TrimSpace(s[i : i+eq]), Eq: true, Start: i}
		mine := ours(p.Key)
		v := keywordValue(s, skipSpace(s, i+eq+1), mine)
		if v.fault != noFault && mine {
			return out, &Error{Key: p.Key, At: v.at, Unclosed: true}
		}
		p.Value, p.Bare, p.End = v.text, v.bare, v.end
		out = append(out, p)
		i = v.end
	}
	return out, nil
}

// fault says why a value could not be read.
type fault uint8

// The faults of a value.
const (
	noFault  fault = iota
	unclosed       // a quote or brace is not closed; at is where it opens
	trailing       // text follows a closed quote or brace before ';'; at is where
)

// value is one value read from a DSN.
type value struct {
	text  string // as read: quotes, braces and escapes removed
	end   int    // the index just after it (in the ADO form, of the ';' or len)
	bare  bool   // neither quoted nor braced
	fault fault
	at    int // where the fault is
}

// adoKeyEnd scans the key of the ADO or ODBC part starting at i, as
// go-mssqldb splits a connection string: it returns the index of the '='
// or ';' that ends it (len when none), and, in the ADO form, whether a
// double quote in it was left open (which the value then continues).
func adoKeyEnd(s string, i int, odbc bool) (int, bool) {
	inQuote := false
	for ; i < len(s); i++ {
		ch := s[i]
		if !odbc && ch == '"' {
			inQuote = !inQuote
		} else if !inQuote && (ch == '=' || ch == ';') {
			break
		}
	}
	return i, inQuote
}

// adoDriverValueEnd returns the index of the ';' (or len) that ends a
// driver's value starting at i, as go-mssqldb reads it: in the ADO form a
// double quote toggles quoting (inQuote: as adoKeyEnd left it); in the
// ODBC form a value in braces runs to its closing brace, }} escaping one.
func adoDriverValueEnd(s string, i int, odbc, inQuote bool) int {
	if odbc {
		j := skipSpace(s, i)
		if j < len(s) && s[j] == '{' {
			for j++; j < len(s); j++ {
				if s[j] == '}' {
					if j+1 < len(s) && s[j+1] == '}' {
						j++
						continue
					}
					break
				}
			}
			i = j
		}
		for i < len(s) && s[i] != ';' {
			i++
		}
		return i
	}
	for i < len(s) {
		if s[i] == '"' {
			inQuote = !inQuote
		} else if !inQuote && s[i] == ';' {
			break
		}
		i++
	}
	return i
}

// adoDriverValue returns a driver's value as written (after its '=') as
// go-mssqldb reads it: in the ADO form trimmed, and without surrounding
// double quotes ("" escaping one); in the ODBC form, a value in braces
// without them (}} escaping one), else trimmed.
func adoDriverValue(v string, odbc bool) string {
	v = strings.TrimSpace(v)
	if !odbc {
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			return strings.ReplaceAll(v[1:len(v)-1], `""`, `"`)
		}
		return v
	}
	if len(v) == 0 || v[0] != '{' {
		return v
	}
	var b strings.Builder
	for j := 1; j < len(v); j++ {
		if v[j] == '}' {
			if j+1 < len(v) && v[j+1] == '}' {
				j++
			} else {
				break
			}
		}
		b.WriteByte(v[j])
	}
	return b.String()
}

// adoValue reads a crl value of an ADO or ODBC string starting at i:
// {braced} (nested braces counted, so {{1205:3};{1222:2}} is one value),
// "quoted" ("" escaping one), or bare up to ';' and trimmed. end is the
// index of the ';' (or len) after it.
func adoValue(s string, i int) value {
	j := skipSpace(s, i)
	var v value
	switch {
	case j < len(s) && s[j] == '{':
		end, ok := closingBrace(s, j)
		if !ok {
			return value{fault: unclosed, at: j}
		}
		v = value{text: s[j+1 : end], end: end + 1}
	case j < len(s) && s[j] == '"':
		v = doubleQuoted(s, j)
		if v.fault != noFault {
			return v
		}
	default:
		end := strings.IndexByte(s[i:], ';')
		if end < 0 {
			end = len(s)
		} else {
			end += i
		}
		return value{text: strings.TrimSpace(s[i:end]), end: end, bare: true}
	}
	j = skipSpace(s, v.end)
	if j < len(s) && s[j] != ';' {
		return value{fault: trailing, at: j}
	}
	v.end = j
	return v
}

// doubleQuoted reads the "quoted" value whose quote is at s[open], ""
// escaping one; end is the index after the closing quote.
func doubleQuoted(s string, open int) value {
	var b strings.Builder
	j := open + 1
	for ; ; j++ {
		if j >= len(s) {
			return value{fault: unclosed, at: open}
		}
		if s[j] == '"' {
			if j+1 < len(s) && s[j+1] == '"' {
				b.WriteByte('"')
				j++
				continue
			}
			break
		}
		b.WriteByte(s[j])
	}
	return value{text: b.String(), end: j + 1}
}

// keywordValue reads the value of a key=value DSN starting at i:
// 'quoted' with backslash escapes, {braced} when braces is set, or bare
// up to white space.
func keywordValue(s string, i int, braces bool) value {
	switch {
	case i < len(s) && s[i] == '\'':
		return singleQuoted(s, i)
	case braces && i < len(s) && s[i] == '{':
		c, ok := closingBrace(s, i)
		if !ok {
			return value{end: len(s), fault: unclosed, at: i}
		}
		return value{text: s[i+1 : c], end: c + 1}
	}
	var b strings.Builder
	j := i
	for ; j < len(s) && !isSpace(s[j]); j++ {
		if s[j] == '\\' && j+1 < len(s) {
			j++
		}
		b.WriteByte(s[j])
	}
	return value{text: b.String(), end: j, bare: true}
}

// singleQuoted reads the 'quoted' value whose quote is at s[open],
// backslash escaping the byte after it.
func singleQuoted(s string, open int) value {
	var b strings.Builder
	j := open + 1
	for ; j < len(s) && s[j] != '\''; j++ {
		if s[j] == '\\' && j+1 < len(s) {
			j++
		}
		b.WriteByte(s[j])
	}
	if j >= len(s) {
		return value{text: b.String(), end: len(s), fault: unclosed, at: open}
	}
	return value{text: b.String(), end: j + 1}
}

// closingBrace returns the index of the brace that closes the one at
// s[open], counting nested braces (crl's rule lists: {{1205:3};{1222:2}}).
func closingBrace(s string, open int) (int, bool) {
	depth := 0
	for j := open; j < len(s); j++ {
		switch s[j] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return j, true
			}
		}
	}
	return 0, false
}

// skipSpace returns the index of the first byte at or after i that is not
// white space.
func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

// isSpace reports ASCII white space, as libpq and pgx read it.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'
}
