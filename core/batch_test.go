package core

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestShapeOf(t *testing.T) {
	cases := []struct {
		query      string
		statements int
		reads      int
		procedure  bool
	}{
		{"UPDATE a SET n = n + 1", 1, 0, false},
		{"UPDATE a SET n = n + 1;", 1, 0, false},
		{"UPDATE a SET n = n + 1; -- done\n /* trailing */ ;", 1, 0, false},
		{"UPDATE a SET n = 1; UPDATE b SET n = 1", 2, 0, false},
		{"update a set s = 'x;y'; ", 1, 0, false},
		{"update a set s = 'it''s; fine'", 1, 0, false},
		{`update "a;b" set n = 1`, 1, 0, false},
		{"update [a;b] set n = 1", 1, 0, false},
		{"update [a]]b;] set n = 1", 1, 0, false},
		{"update `a;b` set n = 1", 1, 0, false},
		{"update a set n = 1 -- ; delete from b", 1, 0, false},
		{"update a set n = 1 /* ; delete from b */", 1, 0, false},
		// Nested comments (SQL Server, PostgreSQL) or not (MySQL): the
		// cautious reading wins.
		{"update a set n = 1 /* /* */ ; delete from b */", 2, 0, false},
		// A backslash escapes a quote in MySQL only: either reading may be
		// the server's, so the one that sees two statements wins.
		{`update a set s = 'x\'; delete from b; --'`, 2, 0, false},
		{"SET NOCOUNT ON; SELECT * FROM t", 2, 2, false},
		{"select 1; select 2;", 2, 2, false},
		{"SELECT * INTO t2 FROM t; SELECT 1", 2, 1, false},
		{"WITH c AS (SELECT 1 AS n) SELECT * FROM c; SELECT 2", 2, 2, false},
		{"WITH c AS (SELECT 1 AS n) DELETE FROM t WHERE n IN (SELECT n FROM c); SELECT 2", 2, 1, false},
		// PostgreSQL's dollar quotes are identifier characters in MySQL.
		{"select $$a;b$$", 2, 1, false},
		{"select $tag$a$tag$, $1", 1, 1, false},
		{"EXEC dbo.Transfer @from = 1", 1, 0, true},
		{"  execute dbo.Transfer", 1, 0, true},
		{"CALL transfer(1, 2)", 1, 0, true},
		{"{call transfer(?)}", 1, 0, true},
		{"dbo.Transfer", 1, 0, true},
		{"[dbo].[Transfer]", 1, 0, true},
		{"COMMIT", 1, 0, false},
		{"EXEC a; EXEC b", 2, 0, false},
		{"", 0, 0, false},
		{" ;; -- x", 0, 0, false},
	}
	for _, tc := range cases {
		got := shapeOf(tc.query)
		assert.Equal(t, batchShape{tc.statements, tc.reads, tc.procedure, FirstKeyword(tc.query)}, got, "%q", tc.query)
	}
}

func FuzzShapeOf(f *testing.F) {
	for _, s := range []string{"update a set n = 1; update b set n = 2", "select 'x;'; /* /* */ */ select 2",
		"select $$;$$", `'\'; x`, "[a;]]", "EXEC p", "{call p}", "-- x\n;", "/*", "'", "$a$", "dbo.p"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		s := shapeOf(q)
		require.GreaterOrEqual(t, s.statements, 0, "%q: %+v", q, s)
		require.LessOrEqual(t, s.reads, s.statements, "%q: %+v", q, s)
		if s.procedure {
			require.Equal(t, 1, s.statements, "%q: the statements of a procedure", q)
		}
		require.False(t, !strings.Contains(q, ";") && s.statements > 1, "%q: %d statements without a ';'", q, s.statements)
		r := Rule{}
		_ = batchRefusal(q, &r)
	})
}
