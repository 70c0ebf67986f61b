package dsnlex

import "strings"

// Fault says why a value could not be read.
type Fault uint8

// The faults of a value.
const (
	NoFault  Fault = iota
	Unclosed       // a quote or brace is not closed; At is where it opens
	Trailing       // text follows a closed quote or brace before ';'; At is where
)

// Value is one value read from a DSN.
type Value struct {
	Text  string // as the driver reads it: quotes, braces and escapes removed
	End   int    // the index just after it (in the ADO form, of the ';' or len)
	Bare  bool   // neither quoted nor braced
	Fault Fault
	At    int // where the fault is
}

// ADOKeyEnd scans the key of the ADO or ODBC part starting at i, as
// go-mssqldb splits a connection string: it returns the index of the '='
// or ';' that ends it (len when none), and, in the ADO form, whether a
// double quote in it was left open (which the value then continues).
func ADOKeyEnd(s string, i int, odbc bool) (int, bool) {
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

// ADODriverValueEnd returns the index of the ';' (or len) that ends a
// driver's value starting at i, as go-mssqldb reads it: in the ADO form a
// double quote toggles quoting (inQuote: as ADOKeyEnd left it); in the
// ODBC form a value in braces runs to its closing brace, }} escaping one.
func ADODriverValueEnd(s string, i int, odbc, inQuote bool) int {
	if odbc {
		j := SkipSpace(s, i)
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

// ADODriverValue returns a driver's value as written (after its '=') as
// go-mssqldb reads it: in the ADO form trimmed, and without surrounding
// double quotes ("" escaping one); in the ODBC form, a value in braces
// without them (}} escaping one), else trimmed.
func ADODriverValue(v string, odbc bool) string {
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

// ADOValue reads a crl value of an ADO or ODBC string starting at i:
// {braced} (nested braces counted, so {{1205:3};{1222:2}} is one value),
// "quoted" ("" escaping one), or bare up to ';' and trimmed. End is the
// index of the ';' (or len) after it.
func ADOValue(s string, i int) Value {
	j := SkipSpace(s, i)
	var v Value
	switch {
	case j < len(s) && s[j] == '{':
		end, ok := ClosingBrace(s, j)
		if !ok {
			return Value{Fault: Unclosed, At: j}
		}
		v = Value{Text: s[j+1 : end], End: end + 1}
	case j < len(s) && s[j] == '"':
		v = doubleQuoted(s, j)
		if v.Fault != NoFault {
			return v
		}
	default:
		end := strings.IndexByte(s[i:], ';')
		if end < 0 {
			end = len(s)
		} else {
			end += i
		}
		return Value{Text: strings.TrimSpace(s[i:end]), End: end, Bare: true}
	}
	j = SkipSpace(s, v.End)
	if j < len(s) && s[j] != ';' {
		return Value{Fault: Trailing, At: j}
	}
	v.End = j
	return v
}

// doubleQuoted reads the "quoted" value whose quote is at s[open], ""
// escaping one; End is the index after the closing quote.
func doubleQuoted(s string, open int) Value {
	var b strings.Builder
	j := open + 1
	for ; ; j++ {
		if j >= len(s) {
			return Value{Fault: Unclosed, At: open}
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
	return Value{Text: b.String(), End: j + 1}
}

// Pair is one pair of the key=value form.
type Pair struct {
	Start int    // the index of the key
	Key   string // trimmed
	Value Value  // its fault is Unclosed when a quote or brace is not closed
}

// NextPair reads the pair of the key=value form whose key starts at i, as
// pgx reads it: a value is 'quoted' with backslash escapes, or bare up to
// white space with a backslash escaping the byte after it; braced says
// whether a key's value may also be {braced} (crl's keys), nil for none.
// It reports false when no '=' follows i: the rest is no pair.
func NextPair(s string, i int, braced func(key string) bool) (Pair, bool) {
	eq := strings.IndexByte(s[i:], '=')
	if eq < 0 {
		return Pair{}, false
	}
	p := Pair{Start: i, Key: strings.TrimSpace(s[i : i+eq])}
	j := SkipSpace(s, i+eq+1)
	p.Value = keywordValue(s, j, braced != nil && braced(p.Key))
	return p, true
}

// keywordValue reads the value of a key=value DSN starting at i:
// 'quoted' with backslash escapes, {braced} when braces is set, or bare
// up to white space.
func keywordValue(s string, i int, braces bool) Value {
	switch {
	case i < len(s) && s[i] == '\'':
		return singleQuoted(s, i)
	case braces && i < len(s) && s[i] == '{':
		c, ok := ClosingBrace(s, i)
		if !ok {
			return Value{End: len(s), Fault: Unclosed, At: i}
		}
		return Value{Text: s[i+1 : c], End: c + 1}
	}
	var b strings.Builder
	j := i
	for ; j < len(s) && !IsSpace(s[j]); j++ {
		if s[j] == '\\' && j+1 < len(s) {
			j++
		}
		b.WriteByte(s[j])
	}
	return Value{Text: b.String(), End: j, Bare: true}
}

// singleQuoted reads the 'quoted' value whose quote is at s[open],
// backslash escaping the byte after it.
func singleQuoted(s string, open int) Value {
	var b strings.Builder
	j := open + 1
	for ; j < len(s) && s[j] != '\''; j++ {
		if s[j] == '\\' && j+1 < len(s) {
			j++
		}
		b.WriteByte(s[j])
	}
	if j >= len(s) {
		return Value{Text: b.String(), End: len(s), Fault: Unclosed, At: open}
	}
	return Value{Text: b.String(), End: j + 1}
}

// Query splits a URL DSN at its query: the text before the first '?',
// the query after it up to a '#', and the fragment from the '#' on. It
// reports false when there is no '?'.
func Query(s string) (base, query, frag string, ok bool) {
	q := strings.IndexByte(s, '?')
	if q < 0 {
		return s, "", "", false
	}
	base, query = s[:q], s[q+1:]
	if h := strings.IndexByte(query, '#'); h >= 0 {
		query, frag = query[:h], query[h:]
	}
	return base, query, frag, true
}

// NextMySQLParam finds the next parameter of a go-sql-driver/mysql DSN at
// or after pos: the index of the '?' or '&' before it and of the next '?'
// or '&' (or len) after it. A parameter is found by its separator, not after the
// first '?', so that a value may hold a '/' (a path), which the driver's
// own parser cannot read. It reports false when none is left.
func NextMySQLParam(s string, pos int) (sep, end int, ok bool) {
	i := strings.IndexAny(s[pos:], "?&")
	if i < 0 {
		return 0, 0, false
	}
	sep = pos + i
	// A parameter ends at the next separator of either kind, so that
	// taking one out never joins its neighbours into a new key.
	end = strings.IndexAny(s[sep+1:], "?&")
	if end < 0 {
		return sep, len(s), true
	}
	return sep, end + sep + 1, true
}

// ValueEnd returns the index just after the value starting at i, read so
// that it runs at least as far as the drivers of form f read it: up to
// the separator of the form (';' for ADO and ODBC, '&' or '#' for a URL
// or MySQL query, white space before the next key for key=value), with
// quoted ('…' with backslash escapes, "…" with "" escapes) and braced
// ({…} with }} escapes) parts skipped whole, and a backslash escaping the
// byte after it. It is the reading of a DSN that hides no less than any
// driver takes for the value.
func ValueEnd(s string, i int, f Form) int {
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\'' || c == '"' || c == '{':
			i = AtomEnd(s, i)
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
// ValueEnd.
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
	if !IsSpace(c) {
		return false
	}
	j := SkipSpace(s, i)
	k := j
	for k < len(s) && IsKeyChar(s[k]) {
		k++
	}
	k = SkipSpace(s, k)
	return j == len(s) || (k > j && k < len(s) && s[k] == '=')
}
