package core

// firstKeyword returns the first keyword of a statement: the first run of
// identifier characters after white space, -- line comments, /* */ block
// comments (nested, as SQL Server allows) and opening parentheses. It does
// not allocate; the caller compares it case-insensitively.
func firstKeyword(q string) string {
	i := 0
	for i < len(q) {
		c := q[i]
		switch {
		case isSpace(c) || c == '(' || c == ';':
			i++
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			i = skipBlockComment(q, i, true)
		case c == 0xEF && i+2 < len(q) && q[i+1] == 0xBB && q[i+2] == 0xBF: // UTF-8 byte order mark
			i += 3
		default:
			j := i
			for j < len(q) && isWordByte(q[j]) {
				j++
			}
			return q[i:j]
		}
	}
	return ""
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// equalFoldASCII compares a keyword with a lower-case filter word.
func equalFoldASCII(s, lower string) bool {
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
