// Package keywords is crl's one table of statement keywords: the words
// that begin a statement of SQL Server (T-SQL), MySQL/MariaDB or
// PostgreSQL, which a rule's query filter compares with a statement's
// first keyword. crl check asks it whether a filter word can match a
// statement, and core's rule parser whether a rule with no timings is a
// filter word cut off by ';'.
package keywords

import (
	"sort"
	"strings"

	"github.com/crl-go/crl/internal/text/editdist"
)

// table holds the keywords, lower-case, sorted (TestTableIsSorted): the
// first word of statements, procedure calls and cursor, session,
// transaction, maintenance and administration statements of the three
// families, and UPSERT (CockroachDB, and the word some ORMs send).
var table = [...]string{
	"abort",       // PostgreSQL
	"alter",       // all
	"analyze",     // MySQL, PostgreSQL
	"backup",      // SQL Server, MariaDB
	"begin",       // all
	"binlog",      // MySQL
	"break",       // SQL Server
	"bulk",        // SQL Server BULK INSERT
	"cache",       // MySQL CACHE INDEX
	"call",        // MySQL, PostgreSQL: a procedure call
	"change",      // MySQL CHANGE REPLICATION SOURCE
	"check",       // MySQL CHECK TABLE
	"checkpoint",  // SQL Server, PostgreSQL
	"checksum",    // MySQL CHECKSUM TABLE
	"clone",       // MySQL
	"close",       // all: cursors
	"cluster",     // PostgreSQL
	"comment",     // PostgreSQL
	"commit",      // all
	"continue",    // SQL Server
	"copy",        // PostgreSQL
	"create",      // all
	"dbcc",        // SQL Server
	"deallocate",  // all
	"declare",     // SQL Server, PostgreSQL
	"delete",      // all
	"deny",        // SQL Server
	"desc",        // MySQL
	"describe",    // MySQL
	"disable",     // SQL Server DISABLE TRIGGER
	"discard",     // PostgreSQL
	"do",          // MySQL, PostgreSQL
	"drop",        // all
	"enable",      // SQL Server ENABLE TRIGGER
	"end",         // PostgreSQL, SQL Server END CONVERSATION
	"exec",        // SQL Server: a procedure call
	"execute",     // all: a procedure call, a prepared statement
	"explain",     // MySQL, PostgreSQL
	"fetch",       // all: cursors
	"flush",       // MySQL
	"get",         // SQL Server, MySQL GET DIAGNOSTICS
	"goto",        // SQL Server
	"grant",       // all
	"handler",     // MySQL
	"help",        // MySQL
	"if",          // SQL Server
	"import",      // MySQL, PostgreSQL
	"insert",      // all
	"install",     // MySQL
	"kill",        // SQL Server, MySQL
	"listen",      // PostgreSQL
	"load",        // MySQL, PostgreSQL
	"lock",        // MySQL, PostgreSQL
	"merge",       // SQL Server, PostgreSQL
	"move",        // SQL Server, PostgreSQL
	"notify",      // PostgreSQL
	"open",        // SQL Server, MySQL: cursors
	"optimize",    // MySQL
	"prepare",     // MySQL, PostgreSQL
	"print",       // SQL Server
	"purge",       // MySQL
	"raiserror",   // SQL Server
	"readtext",    // SQL Server
	"reassign",    // PostgreSQL
	"receive",     // SQL Server
	"reconfigure", // SQL Server
	"refresh",     // PostgreSQL
	"reindex",     // PostgreSQL
	"release",     // MySQL, PostgreSQL
	"rename",      // MySQL
	"repair",      // MySQL
	"replace",     // MySQL
	"reset",       // MySQL, PostgreSQL
	"resignal",    // MySQL
	"restart",     // MySQL
	"restore",     // SQL Server
	"return",      // SQL Server
	"revert",      // SQL Server
	"revoke",      // all
	"rollback",    // all
	"save",        // SQL Server SAVE TRANSACTION
	"savepoint",   // MySQL, PostgreSQL
	"security",    // PostgreSQL SECURITY LABEL
	"select",      // all
	"send",        // SQL Server
	"set",         // all
	"setuser",     // SQL Server
	"show",        // MySQL, PostgreSQL
	"shutdown",    // SQL Server, MySQL
	"signal",      // MySQL
	"start",       // MySQL, PostgreSQL
	"stop",        // MySQL
	"table",       // MySQL, PostgreSQL
	"throw",       // SQL Server
	"truncate",    // all
	"uninstall",   // MySQL
	"unlisten",    // PostgreSQL
	"unlock",      // MySQL
	"update",      // all
	"updatetext",  // SQL Server
	"upsert",      // CockroachDB
	"use",         // SQL Server, MySQL
	"vacuum",      // PostgreSQL
	"values",      // MySQL, PostgreSQL
	"waitfor",     // SQL Server
	"while",       // SQL Server
	"with",        // all
	"writetext",   // SQL Server
	"xa",          // MySQL
}

// Is reports whether w, compared case-insensitively, is a statement
// keyword of the table.
func Is(w string) bool {
	w = strings.ToLower(w)
	i := sort.SearchStrings(table[:], w)
	return i < len(table) && table[i] == w
}

// All returns the keywords, lower-case and sorted.
func All() []string { return append([]string(nil), table[:]...) }

// minNearLength is the length from which a keyword is suggested for a
// word one edit away: shorter keywords have too many real words that
// near (show and shop, drop and prop), which are more likely names than
// misspellings.
const minNearLength = 5

// Near returns the keyword that w (lower-case, not a keyword) probably
// misspells: one of at least five letters one insertion, deletion,
// substitution or swap of two neighbours away (selct, updtae, delte).
// A word that is a keyword with letters added at its end (updates,
// updated, selects) is no misspelling: it reads as a name of its own,
// such as a procedure's.
func Near(w string) (string, bool) {
	if Is(w) {
		return "", false
	}
	rw := []rune(w)
	for _, k := range table {
		if len(k) < minNearLength || strings.HasPrefix(w, k) {
			continue
		}
		if editdist.Distance(rw, []rune(k), 2) <= 1 {
			return k, true
		}
	}
	return "", false
}
