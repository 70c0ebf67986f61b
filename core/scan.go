package core

import "github.com/crl-go/crl/internal/text/sqlscan"

// core reads statement texts through crl's one SQL scanner,
// internal/text/sqlscan: the query filter (FirstKeyword), the batch guard
// (scanBatch) and batchRefusal, and with them the hooks (operation names) and
// mssqltest (CurCmd), so they all agree on what is white space, a comment,
// a string or a word.

// FirstKeyword returns the first keyword of a statement as a rule's query
// filter reads it: the first word after white space, comments, byte
// order marks, opening parentheses and ';', as written ("" when the text
// starts with anything else). Observers name operations by it, so that a
// metric's operation and a rule's filter agree; compare it
// case-insensitively.
func FirstKeyword(query string) string { return sqlscan.FirstKeyword(query) }

func isWordByte(c byte) bool              { return sqlscan.IsWordByte(c) }
func isSpace(c byte) bool                 { return sqlscan.IsSpace(c) }
func equalFoldASCII(s, lower string) bool { return sqlscan.EqualFold(s, lower) }
