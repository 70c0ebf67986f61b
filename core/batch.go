package core

import "strconv"

// Batches and procedure calls.
//
// A statement text that holds more than one statement, or that calls a
// procedure, may have committed part of its work in autocommit mode
// before it failed: with `UPDATE a …; UPDATE b …` the first UPDATE has
// committed when the second is chosen as a deadlock victim, and SQL
// Server does not even stop the batch at a lock time-out (1222). Running
// the text again would apply that part twice. The statement loop
// therefore retries such a text on its own only when that cannot happen:
// a batch whose every statement is a read, a procedure call whose rule
// names it in its filter. A transaction (DoTx) is rolled back as a whole
// and is not concerned.

// batchRisk returns why query may not be retried on its own under rule r,
// or "" when it may: the full scan behind notAlone. It runs on the error
// path only.
func batchRisk(query string, r *Rule) string {
	s := shapeOf(query)
	switch {
	case s.statements > 1 && s.reads < s.statements:
		return "a batch of " + strconv.Itoa(s.statements) + " statements may have committed part of its work"
	case s.statements == 1 && s.procedure && len(r.filter) == 0:
		// With a filter the rule's filter matched the call's first word
		// (exec, execute, call, or the procedure's name): the rule names it.
		return "a procedure call may have committed part of its work, and the rule's filter does not name it"
	}
	return ""
}

// batchShape is what the loop needs to know of a statement text.
type batchShape struct {
	statements int  // statements in the text (empty ones between ';' not counted)
	reads      int  // how many of them only read
	procedure  bool // the text is one procedure call
}

// shapeOf scans query twice, once with the quoting of SQL Server and
// PostgreSQL (nested /* */ comments, $tag$ strings, no backslash escapes)
// and once with MySQL's (flat comments, backslash escapes), and keeps the
// more cautious answer: a ';' that either reading puts outside strings and
// comments separates statements. '#' never starts a comment (it starts
// SQL Server's temporary table names), which can only find more
// statements, never fewer.
func shapeOf(query string) batchShape {
	a, b := scanBatch(query, false), scanBatch(query, true)
	out := a
	if b.statements > out.statements || b.statements == out.statements && b.reads < out.reads {
		out = b
	}
	out.procedure = out.statements == 1 && (a.procedure || b.procedure || isProcName(query))
	return out
}

// statementScan is the state of the statement being scanned.
type statementScan struct {
	first    string // its first word
	verb     string // for WITH: the first select/insert/update/delete/merge at depth 0
	into     bool   // an INTO word (SELECT … INTO writes)
	depth    int    // parenthesis depth
	nonEmpty bool
}

// scanBatch counts the statements of q and its reads. mysql selects MySQL's
// quoting. It never panics and does not allocate.
func scanBatch(q string, mysql bool) batchShape {
	var (
		out batchShape
		st  statementScan
	)
	end := func() {
		if !st.nonEmpty {
			st = statementScan{}
			return
		}
		out.statements++
		if st.isRead() {
			out.reads++
		}
		if out.statements == 1 {
			out.procedure = isProcKeyword(st.first)
		}
		st = statementScan{}
	}
	i := 0
	for i < len(q) {
		c := q[i]
		switch {
		case c == ';':
			end()
			i++
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			i = skipBlockComment(q, i, !mysql)
		case c == '\'' || c == '"' || c == '`':
			st.nonEmpty = true
			i = skipQuoted(q, i, c, mysql && c != '`')
		case c == '[':
			st.nonEmpty = true
			i = skipQuoted(q, i, ']', false)
		case c == '$' && !mysql && dollarTag(q, i) > 0:
			st.nonEmpty = true
			i = skipDollar(q, i, dollarTag(q, i))
		case isWordByte(c) || c >= 0x80:
			j := i
			for j < len(q) && (isWordByte(q[j]) || q[j] >= 0x80) {
				j++
			}
			st.word(q[i:j])
			i = j
		case c == '(':
			st.nonEmpty = true
			st.depth++
			i++
		case c == ')':
			st.nonEmpty = true
			st.depth--
			i++
		case isSpace(c):
			i++
		default:
			st.nonEmpty = true
			i++
		}
	}
	end()
	return out
}

// word notes one word of the statement.
func (s *statementScan) word(w string) {
	s.nonEmpty = true
	if s.first == "" {
		s.first = w
		return
	}
	if equalFoldASCII(w, "into") {
		s.into = true
	}
	if s.verb == "" && s.depth == 0 && equalFoldASCII(s.first, "with") {
		for _, v := range [...]string{"select", "insert", "update", "delete", "merge"} {
			if equalFoldASCII(w, v) {
				s.verb = v
			}
		}
	}
}

// isRead reports a statement that changes no data, so that running it
// again cannot apply anything twice: a SELECT (not SELECT … INTO), a WITH
// whose statement is a SELECT, SHOW, DESCRIBE, VALUES, and the session
// statements SET and DECLARE that SQL Server batches start with.
func (s *statementScan) isRead() bool {
	for _, w := range [...]string{"show", "describe", "desc", "values", "set", "declare"} {
		if equalFoldASCII(s.first, w) {
			return true
		}
	}
	switch {
	case equalFoldASCII(s.first, "select"):
		return !s.into
	case equalFoldASCII(s.first, "with"):
		return s.verb == "select" && !s.into
	}
	return false
}

// isProcKeyword reports the keywords that call a procedure.
func isProcKeyword(w string) bool {
	return equalFoldASCII(w, "exec") || equalFoldASCII(w, "execute") || equalFoldASCII(w, "call")
}

// isProcName reports a text that go-mssqldb sends as a procedure call (an
// RPC): a bare, possibly qualified, name such as dbo.Transfer or
// [dbo].[Transfer], without white space or parentheses.
func isProcName(q string) bool {
	i, j := 0, len(q)
	for i < j && isSpace(q[i]) {
		i++
	}
	for j > i && isSpace(q[j-1]) {
		j--
	}
	q = q[i:j]
	if q == "" || !(isWordByte(q[0]) && (q[0] < '0' || q[0] > '9') || q[0] == '[' || q[0] == '#' || q[0] >= 0x80) {
		return false
	}
	for k := 0; k < len(q); k++ {
		switch c := q[k]; {
		case isSpace(c), c == '(', c == ';', c == '\'', c == '"', c == '`', c == '=', c == ',', c == '*':
			return false
		}
	}
	for _, w := range [...]string{"begin", "commit", "rollback", "select", "checkpoint", "shutdown"} {
		if equalFoldASCII(q, w) {
			return false
		}
	}
	return true
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
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
	for j < len(q) && (isWordByte(q[j]) || q[j] >= 0x80) {
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
