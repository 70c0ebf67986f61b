package db

// This file is not generated: it gives the example and its tests the
// queries' text as the SQL Server stand-in (mssqltest) receives it.

import (
	"fmt"
	"strings"
)

// Sent returns the text of the sqlc query named name ("GetAuthor",
// "ListAuthors", "CreateAuthor", "DeleteAuthor") as go-mssqldb's mssql
// driver sends it, each ? turned into @p1, @p2, …: the text
// mssqltest.Server's Handle and Count match. It returns "" for any other
// name.
func Sent(name string) string {
	var query string
	switch name {
	case "GetAuthor":
		query = getAuthor
	case "ListAuthors":
		query = listAuthors
	case "CreateAuthor":
		query = createAuthor
	case "DeleteAuthor":
		query = deleteAuthor
	default:
		return ""
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "@p%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
