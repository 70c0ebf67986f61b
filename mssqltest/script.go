package mssqltest

import (
	"strings"
	"unicode"
)

// script is the replies scripted for one statement and how many of them
// have been used.
type script struct {
	replies []Reply
	next    int
}

// loginFailure is what FailLogin scripted.
type loginFailure struct {
	number    int32
	remaining int
}

// record holds the scripts and everything the server observed. It lives in
// Server and is guarded by Server.mu.
type record struct {
	scripts      map[string]*script
	loginFailure loginFailure
	loginDrops   int // the next logins answered by closing the connection
	counts       map[string]int
	statements   []string
	logins       int
	committed    [][]string
	rolledBack   [][]string
}

func newRecord() record {
	return record{scripts: map[string]*script{}, counts: map[string]int{}}
}

// statementKey is how statements are matched: surrounding white space and
// trailing semicolons trimmed (T-SQL ignores them, and the driver's ping
// sends "select 1;" while GORM ends its statements with one), case folded.
func statementKey(query string) string {
	trimmed := strings.TrimRightFunc(query, func(r rune) bool { return r == ';' || unicode.IsSpace(r) })
	return strings.ToLower(strings.TrimLeftFunc(trimmed, unicode.IsSpace))
}

// Handle scripts the replies to the statement query: the first execution
// gets replies[0], the next replies[1], and so on; the last reply then
// repeats forever. The query is matched after trimming surrounding white
// space (and trailing semicolons), case-insensitively, against the text the
// driver sends: the batch
// text for a statement without arguments, the SQL text with its @p1
// placeholders for a parameterised one (the first argument of
// sp_executesql), or a procedure's name. Transaction requests can be
// scripted under "BEGIN TRANSACTION", "COMMIT TRANSACTION" and
// "ROLLBACK TRANSACTION". Handle replaces an earlier script for the same
// statement and restarts it; Handle with no replies removes the script, so
// the statement gets the default empty success again.
func (s *Server) Handle(query string, replies ...Reply) {
	key := statementKey(query)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(replies) == 0 {
		delete(s.scripts, key)
		return
	}
	s.scripts[key] = &script{replies: append([]Reply(nil), replies...)}
}

// FailLogin makes the next times logins fail with errorNumber, with the
// class, state and message the real server sends for that number (18456
// "Login failed for user ..." for example). The failed login is answered
// with an ERROR token and a DONE with the error bit, then the connection is
// closed. A later call replaces the earlier one; times <= 0 cancels it.
func (s *Server) FailLogin(errorNumber int32, times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loginFailure = loginFailure{number: errorNumber, remaining: max(times, 0)}
}

// DropLogins makes the next times logins end without an answer: the
// server reads LOGIN7 and closes the connection, as a server that fails
// over or a middlebox that resets the connection mid-login. Dropped logins
// count in Logins and come before those that FailLogin scripts. A later
// call replaces the earlier one; times <= 0 cancels it.
func (s *Server) DropLogins(times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loginDrops = max(times, 0)
}

// Count returns how many times the statement query was received, matched
// as in Handle, whether it was scripted or not. Transaction requests count
// under "BEGIN TRANSACTION", "COMMIT TRANSACTION" and "ROLLBACK
// TRANSACTION"; a ping (db.Ping) counts as "select 1".
func (s *Server) Count(query string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[statementKey(query)]
}

// Logins returns how many LOGIN7 requests were received, failed ones
// included.
func (s *Server) Logins() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logins
}

// Statements returns the text of every batch and RPC received, in arrival
// order across all connections. Transaction requests are not included.
func (s *Server) Statements() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.statements...)
}

// Committed returns one element per committed transaction, in commit
// order: the statements executed inside it, in order.
func (s *Server) Committed() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneTransactions(s.committed)
}

// RolledBack returns one element per rolled-back transaction, in order:
// the statements executed inside it, the failing one included. A
// transaction is rolled back by the client, by a deadlock (Error(1205)
// inside it), or by its connection closing (Drop, Close, a client that
// disconnects).
func (s *Server) RolledBack() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneTransactions(s.rolledBack)
}

// Commits returns how many transactions were committed.
func (s *Server) Commits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.committed)
}

// Rollbacks returns how many transactions were rolled back.
func (s *Server) Rollbacks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rolledBack)
}

// Reset forgets every script, login failure, count, statement and
// transaction record, as if the server had just started. Open connections
// stay open.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record = newRecord()
}

func cloneTransactions(in [][]string) [][]string {
	out := make([][]string, len(in))
	for i, statements := range in {
		out[i] = append([]string{}, statements...)
	}
	return out
}

// received counts a request and returns its scripted reply, or nil when
// the statement is not scripted.
func (s *Server) received(req request) Reply {
	key := statementKey(req.text)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[key]++
	if req.kind != requestTransaction {
		s.statements = append(s.statements, req.text)
	}
	sc, ok := s.scripts[key]
	if !ok {
		return nil
	}
	r := sc.replies[sc.next]
	if sc.next < len(sc.replies)-1 {
		sc.next++
	}
	return r
}

// loginReceived counts a login and tells whether it must fail (and with
// which error number) or be dropped.
func (s *Server) loginReceived() (number int32, fail, drop bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logins++
	if s.loginDrops > 0 {
		s.loginDrops--
		return 0, false, true
	}
	if s.loginFailure.remaining == 0 {
		return 0, false, false
	}
	s.loginFailure.remaining--
	return s.loginFailure.number, true, false
}

// transactionEnded records a finished transaction's statements.
func (s *Server) transactionEnded(statements []string, committed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	statements = append([]string{}, statements...)
	if committed {
		s.committed = append(s.committed, statements)
	} else {
		s.rolledBack = append(s.rolledBack, statements)
	}
}
