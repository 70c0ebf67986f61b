package mssqltest

import (
	"strings"

	"github.com/crl-go/crl/internal/text/sqlscan"
)

// CurCmd values SQL Server puts in DONE, DONEPROC and DONEINPROC. MS-TDS
// leaves the field to the application layer (2.2.7.6); these are the
// values SQL Server uses, as Microsoft's own TDS test server and mssql-jdbc
// (StreamDone) list them. Clients read them: mssql-jdbc reports a row count
// only for a data-changing command, go-mssqldb skips the count of a SELECT
// that sent no columns.
const (
	cmdNone       uint16 = 0x00
	cmdSelect     uint16 = 0xC1
	cmdSelectInto uint16 = 0xC2
	cmdInsert     uint16 = 0xC3
	cmdDelete     uint16 = 0xC4
	cmdUpdate     uint16 = 0xC5
	cmdExecute    uint16 = 0xE0
	cmdMerge      uint16 = 0x117
)

// statementCommands maps a statement's verb (its first keyword, followed by
// the object kind for CREATE, ALTER and DROP) to its CurCmd.
var statementCommands = map[string]uint16{
	"select":           cmdSelect,
	"insert":           cmdInsert,
	"delete":           cmdDelete,
	"update":           cmdUpdate,
	"merge":            cmdMerge,
	"exec":             cmdExecute,
	"execute":          cmdExecute,
	"grant":            0xCD,
	"revoke":           0xCE,
	"deny":             0x99,
	"create table":     0xC6,
	"drop table":       0xC7,
	"alter table":      0xD8,
	"create index":     0xC8,
	"drop index":       0xC9,
	"alter index":      0x151,
	"create database":  0xCB,
	"drop database":    0xCC,
	"create view":      0xCF,
	"drop view":        0xD0,
	"create trigger":   0xDD,
	"drop trigger":     0xE1,
	"create procedure": 0xDE,
	"create proc":      0xDE,
	"drop procedure":   0xDF,
	"drop proc":        0xDF,
	"create function":  0xB2,
	"drop function":    0xB3,
	"create schema":    0x14A,
	"alter schema":     0x14B,
	"drop schema":      0xB0,
}

// dataChanging reports whether cmd is one whose DONE count mssql-jdbc
// returns as an update count (and that may send rows, through OUTPUT).
func dataChanging(cmd uint16) bool {
	switch cmd {
	case cmdInsert, cmdDelete, cmdUpdate, cmdMerge, cmdSelectInto:
		return true
	}
	return false
}

// commandOf returns the CurCmd SQL Server reports for the statement text:
// that of its first statement's verb, found after white space, comments
// and opening parentheses. A WITH clause takes the verb of the statement it
// introduces, SELECT ... INTO is a SELECT INTO, and CREATE, ALTER and DROP
// are told apart by the kind of object. Unknown verbs get cmdNone.
func commandOf(text string) uint16 {
	s := newSQLScanner(text)
	verb := s.word()
	switch verb {
	case "with":
		return cteCommand(s)
	case "select":
		if selectsInto(s) {
			return cmdSelectInto
		}
	case "create", "alter", "drop":
		object := s.word()
		if verb == "create" && object == "or" { // CREATE OR ALTER
			s.word()
			object = s.word()
		}
		for object == "unique" || object == "clustered" || object == "nonclustered" {
			object = s.word()
		}
		verb += " " + object
	}
	return statementCommands[verb]
}

// cteCommand finds the statement a WITH clause introduces: the first
// data-manipulating keyword outside the parentheses of its definitions.
func cteCommand(s *sqlScanner) uint16 {
	for {
		switch w := s.word(); w {
		case "":
			return cmdNone
		case "select":
			if selectsInto(s) {
				return cmdSelectInto
			}
			return cmdSelect
		case "insert", "update", "delete", "merge":
			return statementCommands[w]
		}
	}
}

// selectsInto reports whether the SELECT being scanned has an INTO before
// its FROM, that is, creates a table.
func selectsInto(s *sqlScanner) bool {
	for {
		switch s.word() {
		case "into":
			return true
		case "", "from", "where", "union", "group", "order":
			return false
		}
	}
}

// sqlScanner reads the words of T-SQL text that stand outside
// parentheses, through crl's one SQL scanner (internal/text/sqlscan: comments,
// string literals, quoted identifiers and a byte order mark are skipped as
// crl's rules skip them). It knows just enough T-SQL to find a
// statement's verb.
type sqlScanner struct {
	lex     sqlscan.Lexer
	depth   int  // open parentheses
	started bool // a word was read; parentheses before it only group
	done    bool // the first statement ended
}

func newSQLScanner(text string) *sqlScanner { return &sqlScanner{lex: sqlscan.New(text, false)} }

// word returns the next lower-cased keyword or identifier at parenthesis
// depth zero, or "" at the end of the first statement or the text.
func (s *sqlScanner) word() string {
	for !s.done {
		switch k, w := s.lex.Next(); k {
		case sqlscan.End:
			s.done = true
		case sqlscan.Semi:
			s.done = s.depth == 0 // a verb belongs to the first statement only
		case sqlscan.Open:
			if s.started {
				s.depth++
			}
		case sqlscan.Close:
			s.depth = max(s.depth-1, 0)
		case sqlscan.Word:
			if s.depth == 0 {
				s.started = true
				return strings.ToLower(w)
			}
		}
	}
	return ""
}
