// Package sqlscan is crl's one SQL scanner. core's query filter, its
// batch guard and notAlone, the hooks' operation names and mssqltest's
// CurCmd read a statement text through it, so they agree on what is white space, a comment, a string or a word: a byte
// order mark, -- and /* */ comments, 'strings', "quoted" and `quoted`
// identifiers, [bracketed] names, $tag$ strings, and ';' between
// statements. Two dialects differ where it matters: SQL Server's and
// PostgreSQL's /* */ comments nest and their strings have no backslash
// escapes; MySQL's comments do not nest and its strings do (MySQL set).
package sqlscan

// Kind is the kind of a token of a statement text.
type Kind uint8

// The kinds of tokens.
const (
	End   Kind = iota // the end of the text
	Word              // a run of identifier bytes: letters, digits, '_', and any byte of a non-ASCII character
	Semi              // ';'
	Open              // '('
	Close             // ')'
	Other             // anything else: a string, a quoted name, an operator, a parameter
)

// Lexer walks a statement text token by token. It never panics and does
// not allocate: words are slices of the text. The zero value reads "".
type Lexer struct {
	q     string
	i     int
	start int // where the token Next returned last begins
	mysql bool
}

// New returns a Lexer over q, with MySQL's quoting when mysql is set.
func New(q string, mysql bool) Lexer { return Lexer{q: q, mysql: mysql} }

// Next returns the next token after white space, comments and byte order
// marks, and for a word its text.
func (l *Lexer) Next() (Kind, string) {
	l.skipTrivia()
	l.start = l.i
	if l.i >= len(l.q) {
		return End, ""
	}
	q, i := l.q, l.i
	switch c := q[i]; {
	case c == ';':
		l.i++
		return Semi, ""
	case c == '(':
		l.i++
		return Open, ""
	case c == ')':
		l.i++
		return Close, ""
	case IsWordByte(c) || c >= 0x80:
		j := i
		for j < len(q) && (IsWordByte(q[j]) || q[j] >= 0x80) && !isBOM(q, j) {
			j++
		}
		l.i = j
		return Word, q[i:j]
	}
	l.i = l.skipOther(i)
	return Other, ""
}

// Text returns the text of the token Next returned last: a word, a
// punctuation byte, or a string or quoted name with its quotes ("" at the
// end, or before the first Next). It does not allocate.
func (l *Lexer) Text() string { return l.q[l.start:l.i] }

// skipTrivia moves past white space, comments and byte order marks.
func (l *Lexer) skipTrivia() {
	q := l.q
	for l.i < len(q) {
		i := l.i
		switch {
		case IsSpace(q[i]):
			l.i++
		case isBOM(q, i):
			l.i += 3
		case q[i] == '-' && i+1 < len(q) && q[i+1] == '-':
			for l.i < len(q) && q[l.i] != '\n' {
				l.i++
			}
		case q[i] == '/' && i+1 < len(q) && q[i+1] == '*':
			l.i = skipBlockComment(q, i, !l.mysql)
		default:
			return
		}
	}
}

// skipOther returns the index after the token at i that is neither a word
// nor punctuation the scanner names: a quoted text, or one byte.
func (l *Lexer) skipOther(i int) int {
	q := l.q
	switch c := q[i]; {
	case c == '\'' || c == '"' || c == '`':
		return skipQuoted(q, i, c, l.mysql && c != '`')
	case c == '[':
		return skipQuoted(q, i, ']', false)
	case c == '$' && !l.mysql:
		if n := dollarTag(q, i); n > 0 {
			return skipDollar(q, i, n)
		}
	}
	return i + 1
}

// isBOM reports a UTF-8 byte order mark at i.
func isBOM(q string, i int) bool {
	return i+2 < len(q) && q[i] == 0xEF && q[i+1] == 0xBB && q[i+2] == 0xBF
}

// FirstKeyword returns the first keyword of a statement, as the query
// filter sees it: the first word after white space, comments, byte order
// marks, opening parentheses and ';' ("" when the text starts with
// anything else). The caller compares it case-insensitively.
func FirstKeyword(q string) string {
	if w, ok := leadingWord(q); ok {
		return w
	}
	l := Lexer{q: q}
	for {
		switch k, w := l.Next(); k {
		case Open, Semi:
			continue
		case Word:
			return w
		default:
			return ""
		}
	}
}

// IsRollback reports a ROLLBACK statement, of the transaction or to a
// savepoint: its first keyword is "rollback".
func IsRollback(q string) bool { return EqualFold(FirstKeyword(q), "rollback") }

// leadingWord is FirstKeyword's answer without the lexer for the common
// text that starts with an ASCII letter and whose first word ends at
// white space (SELECT ..., UPDATE ...): any other start is the lexer's.
func leadingWord(q string) (string, bool) {
	if len(q) == 0 || (q[0]|0x20) < 'a' || (q[0]|0x20) > 'z' {
		return "", false
	}
	i := 1
	for i < len(q) && IsWordByte(q[i]) {
		i++
	}
	if i < len(q) && !IsSpace(q[i]) {
		return "", false
	}
	return q[:i], true
}

// IsWordByte reports an ASCII identifier byte: a letter, a digit or '_'.
func IsWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// IsSpace reports ASCII white space, the white space between SQL tokens.
func IsSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// TrimSpace returns s without the ASCII white space (IsSpace) around it.
// crl's readers of rules and settings trim with it, not with
// strings.TrimSpace: a no-break space (U+00A0) or another Unicode space
// is part of the value, as it is for the JDBC driver, whose String.trim
// removes only characters up to U+0020, so a value JDBC keeps is never
// read as a shorter one.
func TrimSpace(s string) string {
	i, j := 0, len(s)
	for i < j && IsSpace(s[i]) {
		i++
	}
	for j > i && IsSpace(s[j-1]) {
		j--
	}
	return s[i:j]
}

// EqualFold compares a keyword with a lower-case word, ASCII
// case-insensitively, without allocating.
func EqualFold(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// skipBlockComment returns the index after the /* */ comment at i; nested
// comments nest when nest is set. An unterminated comment runs to the end.
func skipBlockComment(q string, i int, nest bool) int {
	depth := 0
	for i < len(q) {
		switch {
		case q[i] == '/' && i+1 < len(q) && q[i+1] == '*':
			if depth == 0 || nest {
				depth++
			}
			i += 2
		case q[i] == '*' && i+1 < len(q) && q[i+1] == '/':
			depth--
			i += 2
			if depth == 0 {
				return i
			}
		default:
			i++
		}
	}
	return i
}

// skipQuoted returns the index after the quoted text whose opening quote
// is at i and that ends with close (doubled, it stands for itself; with
// backslash, a backslash escapes the next byte). An unterminated quote runs
// to the end.
func skipQuoted(q string, i int, close byte, backslash bool) int {
	i++
	for i < len(q) {
		switch c := q[i]; {
		case backslash && c == '\\':
			i += 2
		case c == close:
			if i+1 < len(q) && q[i+1] == close {
				i += 2
				continue
			}
			return i + 1
		default:
			i++
		}
	}
	return len(q)
}

// dollarTag returns the length of the PostgreSQL dollar-quote opener at i
// ($$ or $tag$), or 0.
func dollarTag(q string, i int) int {
	j := i + 1
	if j < len(q) && q[j] >= '0' && q[j] <= '9' {
		return 0 // $1: a parameter
	}
	for j < len(q) && (IsWordByte(q[j]) || q[j] >= 0x80) {
		j++
	}
	if j < len(q) && q[j] == '$' {
		return j + 1 - i
	}
	return 0
}

// skipDollar returns the index after the dollar-quoted string at i whose
// opener is n bytes long.
func skipDollar(q string, i, n int) int {
	tag := q[i : i+n]
	for j := i + n; j+n <= len(q); j++ {
		if q[j:j+n] == tag {
			return j + n
		}
	}
	return len(q)
}
