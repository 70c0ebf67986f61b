package core

import "github.com/crl-go/crl/internal/text/sqlscan"

// core reads statement texts through crl's one SQL scanner,
// internal/text/sqlscan: the query filter (firstKeyword), the batch guard
// (scanBatch) and batchRefusal, and with them the hooks (operation names) and
// mssqltest (CurCmd), so they all agree on what is white space, a comment,
// a string or a word.

// firstKeyword returns the first keyword of a statement, as the query
// filter sees it (sqlscan.FirstKeyword).
func firstKeyword(q string) string { return sqlscan.FirstKeyword(q) }

func isWordByte(c byte) bool              { return sqlscan.IsWordByte(c) }
func isSpace(c byte) bool                 { return sqlscan.IsSpace(c) }
func equalFoldASCII(s, lower string) bool { return sqlscan.EqualFold(s, lower) }
