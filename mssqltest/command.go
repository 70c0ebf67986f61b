package mssqltest

import (
	"strings"
	"unicode"
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
	s := &sqlScanner{text: text}
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

// sqlScanner reads the words of T-SQL text that stand outside parentheses,
// skipping comments, string literals and quoted identifiers. It knows
// just enough T-SQL to find a statement's verb.
type sqlScanner struct {
	text    string
	pos     int
	depth   int  // open parentheses
	started bool // a word was read; parentheses before it only group
}

// word returns the next lower-cased keyword or identifier at parenthesis
// depth zero, or "" at the end of the first statement or the text.
func (s *sqlScanner) word() string {
	for s.pos < len(s.text) {
		c := s.text[s.pos]
		switch {
		case c == '-' && strings.HasPrefix(s.text[s.pos:], "--"):
			if end := strings.IndexByte(s.text[s.pos:], '\n'); end >= 0 {
				s.pos += end + 1
			} else {
				s.pos = len(s.text)
			}
		case c == '/' && strings.HasPrefix(s.text[s.pos:], "/*"):
			s.skipBlockComment()
		case c == '\'' || c == '"':
			s.skipQuoted(c)
		case c == '[':
			s.skipQuoted(']')
		case c == '(':
			if s.started {
				s.depth++
			}
			s.pos++
		case c == ')':
			s.depth = max(s.depth-1, 0)
			s.pos++
		case c == ';' && s.depth == 0:
			s.pos = len(s.text) // a verb belongs to the first statement only
		case isWordByte(c):
			start := s.pos
			for s.pos < len(s.text) && isWordByte(s.text[s.pos]) {
				s.pos++
			}
			if s.depth == 0 {
				s.started = true
				return strings.ToLower(s.text[start:s.pos])
			}
		default:
			s.pos++
		}
	}
	return ""
}

// skipBlockComment skips a /* */ comment; T-SQL nests them.
func (s *sqlScanner) skipBlockComment() {
	nesting := 0
	for s.pos < len(s.text) {
		switch {
		case strings.HasPrefix(s.text[s.pos:], "/*"):
			nesting++
			s.pos += 2
		case strings.HasPrefix(s.text[s.pos:], "*/"):
			nesting--
			s.pos += 2
			if nesting == 0 {
				return
			}
		default:
			s.pos++
		}
	}
}

// skipQuoted skips a literal or quoted identifier up to its closing
// character; a doubled closing character stands for itself.
func (s *sqlScanner) skipQuoted(close byte) {
	s.pos++ // the opening character
	for s.pos < len(s.text) {
		if s.text[s.pos] != close {
			s.pos++
			continue
		}
		s.pos++
		if s.pos < len(s.text) && s.text[s.pos] == close {
			s.pos++
			continue
		}
		return
	}
}

func isWordByte(c byte) bool {
	return c == '_' || c == '@' || c == '#' || c >= 0x80 || unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c))
}
