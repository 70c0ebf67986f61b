package core

import (
	"strconv"

	"github.com/crl-go/crl/internal/text/sqlscan"
)

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
// or "" when it may: the full scan behind batchRefusal. It runs on the error
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
	statements int    // statements in the text (empty ones between ';' not counted)
	reads      int    // how many of them only read
	procedure  bool   // the text is one procedure call
	keyword    string // the text's first keyword, as the query filter reads it (FirstKeyword)
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
	out.keyword = a.keyword // the query filter's reading (SQL Server's quoting)
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

// scanBatch counts the statements of q and its reads, through the one
// scanner (internal/text/sqlscan); mysql selects MySQL's quoting. It never panics and does
// not allocate.
func scanBatch(q string, mysql bool) batchShape {
	var (
		out batchShape
		st  statementScan
	)
	end := func() {
		if st.nonEmpty {
			out.statements++
			if st.isRead() {
				out.reads++
			}
			if out.statements == 1 {
				out.procedure = isProcKeyword(st.first)
			}
		}
		st = statementScan{}
	}
	l := sqlscan.New(q, mysql)
	leading := true // no token yet but '(' and ';'
	for {
		k, w := l.Next()
		if leading && k != sqlscan.Open && k != sqlscan.Semi {
			leading, out.keyword = false, w
		}
		switch k {
		case sqlscan.End:
			end()
			return out
		case sqlscan.Semi:
			end()
		case sqlscan.Word:
			st.word(w)
		case sqlscan.Open:
			st.nonEmpty = true
			st.depth++
		case sqlscan.Close:
			st.nonEmpty = true
			st.depth--
		default:
			st.nonEmpty = true
		}
	}
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
	return q != "" && procNameStart(q[0]) && !hasNonNameByte(q) && !isBareKeyword(q)
}

// procNameStart reports a byte a procedure's name may begin with: a word
// byte that is not a digit, '[', '#', or a byte of a non-ASCII letter.
func procNameStart(c byte) bool {
	return isWordByte(c) && (c < '0' || c > '9') || c == '[' || c == '#' || c >= 0x80
}

// hasNonNameByte reports a byte that no bare procedure name holds: white
// space, a parenthesis, a quote, or an operator.
func hasNonNameByte(q string) bool {
	for k := 0; k < len(q); k++ {
		switch c := q[k]; {
		case isSpace(c), c == '(', c == ';', c == '\'', c == '"', c == '`', c == '=', c == ',', c == '*':
			return true
		}
	}
	return false
}

// isBareKeyword reports a statement of one keyword that is no procedure.
func isBareKeyword(q string) bool {
	for _, w := range [...]string{"begin", "commit", "rollback", "select", "checkpoint", "shutdown"} {
		if equalFoldASCII(q, w) {
			return true
		}
	}
	return false
}
