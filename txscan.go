package crl

import (
	"math/bits"
	"strings"

	"github.com/crl-go/crl/internal/tables/family"
	"github.com/crl-go/crl/internal/text/sqlscan"
)

// Transactions begun as statement text.
//
// A session can be in a transaction that BeginTx did not begin: a
// statement BEGIN, START TRANSACTION or BEGIN TRAN sent on a *sql.Conn,
// autocommit turned off (MySQL's SET autocommit = 0), implicit
// transactions turned on (SQL Server's SET IMPLICIT_TRANSACTIONS ON).
// The layer reads each statement's text through the one scanner
// (sqlscan) to know it: a statement in such a transaction runs once,
// never retried alone. Reading errs on the side of a transaction: what
// may begin one counts as beginning it, what ends one counts only when
// it surely did (the statement succeeded and nothing in the text could
// have skipped it).

// txDialect is how a family's statement texts begin and end transactions.
type txDialect struct {
	mysql bool // MySQL's quoting, for the scanner
	// anywhere: statements need no ';' between them (T-SQL), so every
	// word may start one; else only the first word of each statement counts.
	anywhere bool
	// blockBegin: BEGIN alone opens a block (T-SQL's BEGIN … END, BEGIN
	// TRY); only BEGIN TRAN[SACTION] and BEGIN DISTRIBUTED TRAN[SACTION]
	// begin a transaction. Else BEGIN, whatever follows, begins one.
	blockBegin bool
	startTx    bool // START TRANSACTION begins one (not T-SQL)
	nests      bool // BEGIN TRAN inside a transaction nests (@@TRANCOUNT): COMMIT ends one level
	pgEnds     bool // END and ABORT end a transaction, PREPARE TRANSACTION takes it from the session (PostgreSQL)
	autocommit bool // SET autocommit = 0|OFF keeps the session in a transaction until = 1|ON (MySQL)
	offCommits bool // turning autocommit back on commits the open transaction (MySQL)
	implicit   bool // SET IMPLICIT_TRANSACTIONS ON and SET ANSI_DEFAULTS ON do it until OFF (SQL Server)
	xa         bool // XA START and XA BEGIN begin one, XA COMMIT and XA ROLLBACK end it (MySQL)
	// resetEnds: the driver's ResetSession resets the session on the
	// server, rolling its transaction back and its SET options to their
	// defaults (go-mssqldb's RESETCONNECTION).
	resetEnds bool
}

// txDialects is the reading of each transaction-text dialect, indexed by
// family.TxText (the family table's Profile.TxText says which a family
// speaks). A driver crl does not know (TxTextAny) gets every way of
// beginning a transaction, nesting, and only the ends every family reads
// alike (COMMIT, ROLLBACK).
var txDialects = [...]txDialect{
	family.TxTextAny:      {startTx: true, nests: true, autocommit: true, implicit: true, xa: true},
	family.TxTextTSQL:     {anywhere: true, blockBegin: true, nests: true, implicit: true, resetEnds: true},
	family.TxTextMySQL:    {mysql: true, startTx: true, autocommit: true, offCommits: true, xa: true},
	family.TxTextPostgres: {startTx: true, pgEnds: true},
}

// dialectOf returns the dialect of fam.
func dialectOf(fam family.Family) *txDialect {
	if d := fam.Profile().TxText; int(d) < len(txDialects) {
		return &txDialects[d]
	}
	return &txDialects[family.TxTextAny]
}

// txState is what the statement texts said of the session's transaction.
type txState struct {
	open   uint8 // transactions begun and not ended: more than one only where they nest
	sticky bool  // autocommit off, or implicit transactions on: every statement is in one
}

// in reports whether the session is in a transaction.
func (s txState) in() bool { return s.open > 0 || s.sticky }

// txMove is what one statement does to the session's transaction.
type txMove uint8

const (
	moveNone      txMove = iota
	moveBegin            // begins one (or another level of one)
	moveCommit           // ends one (one level where they nest)
	moveRollback         // ends it, every level
	moveStickyOn         // autocommit off, implicit transactions on
	moveStickyOff        // autocommit on, implicit transactions off
)

// apply returns s after m. With failed (the text's execution failed, or
// something in it may have skipped a statement) only what begins a
// transaction counts.
func (s txState) apply(m txMove, d *txDialect, failed bool) txState {
	switch m {
	case moveBegin:
		if !d.nests {
			s.open = 1
		} else if s.open < 255 {
			s.open++
		}
	case moveStickyOn:
		s.sticky = true
	}
	if failed {
		return s
	}
	switch m {
	case moveCommit:
		if d.nests && s.open > 0 {
			s.open--
		} else {
			s.open = 0
		}
	case moveRollback:
		s.open = 0
	case moveStickyOff:
		if d.offCommits && s.sticky {
			s.open = 0
		}
		s.sticky = false
	}
	return s
}

// mayBegin reports whether q may begin a transaction (or turn autocommit
// off): the test of every statement outside one. Most statements answer
// from their first word and the absence of ';', or for T-SQL from the
// absence of BEGIN and of the two SET options, without a scan and
// without allocating.
func (d *txDialect) mayBegin(q string) bool {
	if !d.anywhere && len(q) > 0 && !mayStart[q[0]] && strings.IndexByte(q, ';') < 0 {
		return false // the common case: a first word such as UPDATE or SELECT, one statement
	}
	return d.mayBeginRead(q)
}

// mayStart holds the bytes a text that may begin a transaction can start
// with: the first letters of BEGIN, START, SET and XA, and every byte
// that is no ASCII word byte (white space, a comment, a parenthesis, a
// byte order mark).
var mayStart = func() (t [256]bool) {
	for c := range t {
		t[c] = !sqlscan.IsWordByte(byte(c))
	}
	for _, c := range "bBsSxX" {
		t[c] = true
	}
	return t
}()

// mayBeginRead is mayBegin past its first test.
func (d *txDialect) mayBeginRead(q string) bool {
	if d.anywhere {
		if !hasTranHint(q) {
			return false
		}
	} else if !d.firstMayBegin(q) && strings.IndexByte(q, ';') < 0 {
		return false
	}
	return d.walk(q, txState{}, true).in()
}

// firstMayBegin reports whether q's first word may begin a statement
// that begins a transaction; true for a text that starts with anything
// but a word (a comment, a parenthesis), which walk reads whole.
func (d *txDialect) firstMayBegin(q string) bool {
	i := 0
	for i < len(q) && sqlscan.IsSpace(q[i]) {
		i++
	}
	if i == len(q) {
		return false
	}
	switch q[i] | 0x20 {
	case 'b', 's', 'x': // begin, start, set, xa
	default:
		return !sqlscan.IsWordByte(q[i])
	}
	j := i
	for j < len(q) && sqlscan.IsWordByte(q[j]) {
		j++
	}
	w := q[i:j]
	return sqlscan.EqualFold(w, "begin") || sqlscan.EqualFold(w, "start") ||
		(d.autocommit || d.implicit) && sqlscan.EqualFold(w, "set") ||
		d.xa && sqlscan.EqualFold(w, "xa")
}

// hasTranHint reports whether q may hold a T-SQL statement that begins a
// transaction: BEGIN (TRAN, DISTRIBUTED TRAN), IMPLICIT_TRANSACTIONS or
// ANSI_DEFAULTS, in any case. It looks for 'b' and '_' eight bytes at a
// time, and at the words around each.
func hasTranHint(q string) bool {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
		lower = 0x2020202020202020
		bs    = 0x6262626262626262 // 'b' (and 'B', lowered)
		us    = 0x7f7f7f7f7f7f7f7f // '_' lowered (0x5f|0x20)
	)
	i := 0
	for ; i+8 <= len(q); i += 8 {
		w := q[i : i+8]
		v := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		v |= lower
		x, y := v^bs, v^us
		// A byte of x or y is zero where q has a candidate (and perhaps
		// above one, a borrow's false alarm, which tranHintAt rejects).
		m := ((x-ones)&^x | (y-ones)&^y) & highs
		for m != 0 {
			if tranHintAt(q, i+bits.TrailingZeros64(m)/8) {
				return true
			}
			m &= m - 1
		}
	}
	for ; i < len(q); i++ {
		if tranHintAt(q, i) {
			return true
		}
	}
	return false
}

// tranHintAt reports a word of hasTranHint at q[i]: BEGIN starting
// there, or the '_' of IMPLICIT_TRANSACTIONS or ANSI_DEFAULTS.
func tranHintAt(q string, i int) bool {
	switch q[i] {
	case 'b', 'B':
		return i+5 <= len(q) && sqlscan.EqualFold(q[i:i+5], "begin")
	case '_':
		return i >= 8 && sqlscan.EqualFold(q[i-8:i], "implicit") ||
			i >= 4 && sqlscan.EqualFold(q[i-4:i], "ansi")
	}
	return false
}

// walk returns st after q ran: each statement's move applied in order,
// only those that begin a transaction when failed (q's execution
// failed) or when q holds what may skip a statement or does not run it
// (endsUnsure).
func (d *txDialect) walk(q string, st txState, failed bool) txState {
	failed = failed || d.endsUnsure(q)
	l := sqlscan.New(q, d.mysql)
	start := true // at a statement's first token
	for {
		k, w := l.Next()
		switch {
		case k == sqlscan.End:
			return st
		case k == sqlscan.Semi:
			start = true
			continue
		case k == sqlscan.Open && start:
			continue
		}
		if k == sqlscan.Word && (start || d.anywhere) {
			m, after := d.moveOf(w, l)
			if m != moveNone {
				st = st.apply(m, d, failed)
				if d.anywhere {
					l = after // the move's own words start nothing
				}
				start = false
				continue
			}
			if st.sticky && st.open == 0 {
				st.open = 1 // a statement with autocommit off, or implicit transactions on, begins one
			}
		}
		start = false
	}
}

// moveOf returns the move of the statement whose first word is w (l
// after it), and the lexer after the words that make the move (which may
// be past the statement's ';').
func (d *txDialect) moveOf(w string, l sqlscan.Lexer) (txMove, sqlscan.Lexer) {
	switch {
	case sqlscan.EqualFold(w, "begin"):
		if !d.blockBegin || nextWord(&l, "tran", "transaction", "distributed") {
			return moveBegin, l
		}
	case d.startTx && sqlscan.EqualFold(w, "start"):
		if nextWord(&l, "transaction") {
			return moveBegin, l
		}
	case sqlscan.EqualFold(w, "set"):
		return d.setMove(l)
	case d.xa && sqlscan.EqualFold(w, "xa"):
		return xaMove(l)
	default:
		return d.endOf(w, l)
	}
	return moveNone, l
}

// endOf is moveOf for the statements that end a transaction: COMMIT and
// ROLLBACK; END, ABORT and PREPARE TRANSACTION where they do (pgEnds).
func (d *txDialect) endOf(w string, l sqlscan.Lexer) (txMove, sqlscan.Lexer) {
	switch {
	case sqlscan.EqualFold(w, "commit"), d.pgEnds && sqlscan.EqualFold(w, "end"):
		return d.endMove(l, moveCommit)
	case sqlscan.EqualFold(w, "rollback"), d.pgEnds && sqlscan.EqualFold(w, "abort"):
		return d.endMove(l, moveRollback)
	case d.pgEnds && sqlscan.EqualFold(w, "prepare"):
		if nextWord(&l, "transaction") {
			return moveRollback, l // the prepared transaction leaves the session
		}
	}
	return moveNone, l
}

// nextWord reads the next token and reports whether it is one of words;
// l moves past it only when it is.
func nextWord(l *sqlscan.Lexer, words ...string) bool {
	la := *l
	k, w := la.Next()
	if k != sqlscan.Word {
		return false
	}
	for _, x := range words {
		if sqlscan.EqualFold(w, x) {
			*l = la
			return true
		}
	}
	return false
}

// endMove reads the rest of a COMMIT, ROLLBACK, END or ABORT statement
// whose move is end: none for ROLLBACK TO a savepoint and for COMMIT or
// ROLLBACK PREPARED (another session's transaction), a begin for AND
// CHAIN (the next transaction begins at once). In T-SQL (tsqlEnd) the
// statement is not delimited.
func (d *txDialect) endMove(l sqlscan.Lexer, end txMove) (txMove, sqlscan.Lexer) {
	if d.anywhere {
		return tsqlEnd(l, end)
	}
	prev := ""
	for {
		k, w := l.Next()
		switch {
		case k == sqlscan.End || k == sqlscan.Semi:
			return end, l
		case k != sqlscan.Word:
			prev = ""
			continue
		case sqlscan.EqualFold(w, "to"), sqlscan.EqualFold(w, "prepared"):
			return moveNone, l
		case sqlscan.EqualFold(w, "chain") && !sqlscan.EqualFold(prev, "no"):
			return moveBegin, l
		}
		prev = w
	}
}

// tsqlEnd reads the rest of a T-SQL COMMIT or ROLLBACK: COMMIT [TRAN
// [name]] and COMMIT WORK end one level; ROLLBACK and ROLLBACK WORK end
// the transaction. ROLLBACK TRAN followed by anything is no end: what
// follows may be a savepoint's name.
func tsqlEnd(l sqlscan.Lexer, end txMove) (txMove, sqlscan.Lexer) {
	if nextWord(&l, "work") {
		return end, l
	}
	if !nextWord(&l, "tran", "transaction") {
		return end, l
	}
	la := l
	k, w := la.Next()
	if end == moveCommit {
		if k == sqlscan.Word && !startsMove(w) {
			l = la // the transaction's name, which COMMIT ignores
		}
		return end, l
	}
	if k == sqlscan.End || k == sqlscan.Semi {
		return end, l
	}
	return moveNone, l
}

// startsMove reports a word that starts a statement moveOf reads, and so
// is no transaction's name: T-SQL reserves them.
func startsMove(w string) bool {
	for _, x := range [...]string{"begin", "commit", "rollback", "set", "save"} {
		if sqlscan.EqualFold(w, x) {
			return true
		}
	}
	return false
}

// xaMove reads the rest of a MySQL XA statement.
func xaMove(l sqlscan.Lexer) (txMove, sqlscan.Lexer) {
	switch {
	case nextWord(&l, "start", "begin"):
		return moveBegin, l
	case nextWord(&l, "commit", "rollback"):
		return moveRollback, l
	}
	return moveNone, l
}

// setMove reads the rest of a SET statement, in the dialect's forms.
func (d *txDialect) setMove(l sqlscan.Lexer) (txMove, sqlscan.Lexer) {
	m, after := moveNone, l
	if d.autocommit {
		m, after = autocommitMove(l)
	}
	if d.implicit {
		mi, ai := implicitMove(l)
		if mi == moveStickyOn || m == moveNone {
			m, after = mi, ai
		}
	}
	return m, after
}

// autocommitMove reads the rest of a MySQL SET statement: a sticky move
// for an assignment of the session's autocommit (SET autocommit = 0,
// SET SESSION autocommit = OFF, SET @@autocommit := 1, one of a list),
// the last one's; on for a value it cannot read (a variable, an
// expression, DEFAULT). GLOBAL and PERSIST assignments leave the session
// as it is; @autocommit is a user variable.
func autocommitMove(l sqlscan.Lexer) (txMove, sqlscan.Lexer) {
	m := moveNone
	var a assignment
	for {
		k, w := l.Next()
		t := l.Text()
		if k == sqlscan.End || k == sqlscan.Semi || a.depth == 0 && t == "," {
			if a.target && !a.global {
				m = a.move()
			}
			if t != "," {
				return m, l
			}
			a = assignment{}
			continue
		}
		a.token(k, w, t)
	}
}

// assignment is one assignment of a MySQL SET statement, as read so far.
type assignment struct {
	target, global bool   // the session's autocommit; a GLOBAL or PERSIST one
	inValue        bool   // past '=' (or ':=')
	ats            int    // '@' before the name: one for a user variable
	depth          int    // parentheses open in the value
	tokens         int    // tokens of the value
	value          string // its first token, when a word
}

// token notes one token of the assignment.
func (a *assignment) token(k sqlscan.Kind, w, t string) {
	switch {
	case a.inValue:
		a.tokens++
		if a.tokens == 1 && k == sqlscan.Word {
			a.value = w
		}
		if k == sqlscan.Open {
			a.depth++
		} else if k == sqlscan.Close {
			a.depth--
		}
	case t == "=":
		a.inValue = true
	case t == "@":
		a.ats++
	case k == sqlscan.Word:
		a.global = a.global || sqlscan.EqualFold(w, "global") || sqlscan.EqualFold(w, "persist") || sqlscan.EqualFold(w, "persist_only")
		a.target = sqlscan.EqualFold(w, "autocommit") && a.ats != 1
	}
}

// move returns the sticky move of an assignment of autocommit: off for
// 1, ON and TRUE, on for anything else (0, OFF, FALSE, or a value it
// cannot read).
func (a *assignment) move() txMove {
	if a.tokens == 1 {
		for _, on := range [...]string{"1", "on", "true"} {
			if sqlscan.EqualFold(a.value, on) {
				return moveStickyOff
			}
		}
	}
	return moveStickyOn
}

// implicitMove reads the rest of a T-SQL SET statement: SET
// IMPLICIT_TRANSACTIONS ON|OFF and SET ANSI_DEFAULTS ON|OFF (which sets
// IMPLICIT_TRANSACTIONS too), alone or in a list of options (SET
// ANSI_NULLS, IMPLICIT_TRANSACTIONS ON). A SET of one of them that it
// cannot read turns them on.
func implicitMove(l sqlscan.Lexer) (txMove, sqlscan.Lexer) {
	target := false
	unsure := func() (txMove, sqlscan.Lexer) {
		if target {
			return moveStickyOn, l
		}
		return moveNone, l
	}
	for {
		k, w := l.Next()
		if k != sqlscan.Word {
			return unsure()
		}
		switch {
		case sqlscan.EqualFold(w, "on"), sqlscan.EqualFold(w, "off"):
			if !target {
				return moveNone, l
			}
			if sqlscan.EqualFold(w, "on") {
				return moveStickyOn, l
			}
			return moveStickyOff, l
		case sqlscan.EqualFold(w, "implicit_transactions"), sqlscan.EqualFold(w, "ansi_defaults"):
			target = true
		}
		la := l
		k, _ = la.Next()
		if k == sqlscan.Other && la.Text() == "," {
			l = la
		} else if k != sqlscan.Word {
			return unsure()
		}
	}
}

// endsUnsure reports whether q holds what may skip one of its statements,
// or statement text that does not run, so that an end it holds may not
// have ended anything: T-SQL's control flow (IF, WHILE, TRY … CATCH,
// GOTO, RETURN) and the bodies of procedures, functions and triggers; a
// statement that begins with CREATE or ALTER elsewhere.
func (d *txDialect) endsUnsure(q string) bool {
	l := sqlscan.New(q, d.mysql)
	start := true
	for {
		k, w := l.Next()
		switch k {
		case sqlscan.End:
			return false
		case sqlscan.Semi:
			start = true
			continue
		case sqlscan.Word:
			if d.anywhere && isTSQLFlow(w) || start && (sqlscan.EqualFold(w, "create") || sqlscan.EqualFold(w, "alter")) {
				return true
			}
		}
		start = false
	}
}

// isTSQLFlow reports a T-SQL word of control flow or of a definition.
func isTSQLFlow(w string) bool {
	for _, x := range [...]string{"if", "else", "while", "try", "catch", "goto", "return", "break", "continue", "proc", "procedure", "function", "trigger"} {
		if sqlscan.EqualFold(w, x) {
			return true
		}
	}
	return false
}
