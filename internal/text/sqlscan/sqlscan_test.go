package sqlscan

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFirstKeyword(t *testing.T) {
	for q, want := range map[string]string{
		"select 1":                     "select",
		"  /* a */ -- b\n (UPDATE t)":  "UPDATE",
		"\xEF\xBB\xBFInsert into t":    "Insert",
		"":                             "",
		"((":                           "",
		";; delete from t":             "delete",
		"'x' select":                   "",
		"exec dbo.p @a = 1; select 1":  "exec",
		"/* a /* nested */ b */ merge": "merge",
	} {
		assert.Equal(t, want, FirstKeyword(q), "%q", q)
	}
}

// leadingWord, FirstKeyword's path without the lexer, answers as the
// lexer does wherever it answers.
func TestLeadingWordIsTheLexers(t *testing.T) {
	for _, q := range []string{"select 1", "SELECT\tid", "update", "x", "Select(1)", "select$1 x",
		"N'a' x", "E'a'", "select_1 x", "s1 x", "é x", "select\u00a0x", "with x as (select 1) select * from x"} {
		l := Lexer{q: q}
		k, w := l.Next()
		if k != Word {
			w = ""
		}
		if got, ok := leadingWord(q); ok {
			assert.Equal(t, w, got, "%q", q)
		}
	}
}

// The tokens of a text, in both dialects: strings, quoted names, dollar
// quotes and comments are one token or none.
func TestLexer(t *testing.T) {
	type tok struct {
		k Kind
		w string
	}
	read := func(q string, mysql bool) []tok {
		var out []tok
		l := New(q, mysql)
		for {
			k, w := l.Next()
			if k == End {
				return out
			}
			out = append(out, tok{k, w})
		}
	}
	assert.Equal(t, []tok{{Word, "select"}, {Other, ""}, {Semi, ""}, {Open, ""}, {Word, "x"}, {Close, ""}},
		read("select 'a;b' ; (x)", false))
	assert.Equal(t, []tok{{Word, "select"}, {Other, ""}, {Word, "b"}, {Other, ""}},
		read(`select 'a\' b '`, false), "no backslash escape: the string ends at the second quote")
	assert.Equal(t, []tok{{Word, "select"}, {Other, ""}},
		read(`select 'a\' b '`, true), "MySQL: the backslash escapes the quote")
	assert.Equal(t, []tok{{Word, "select"}, {Other, ""}},
		read("select $t$ ; $t$", false), "a dollar-quoted string")
	assert.Equal(t, []tok{{Word, "x"}}, read("/* /* */ */ x", false))
	assert.Equal(t, []tok{{Other, ""}, {Other, ""}, {Word, "x"}}, read("/* /* */ */ x", true), "MySQL's comments do not nest")
	assert.Equal(t, []tok{{Other, ""}, {Word, "select"}}, read("[a;b] \uFEFFselect", false))
}

// Text gives the text of the token just read, whatever its kind, so that
// a reader can tell one punctuation byte from another.
func TestLexerText(t *testing.T) {
	l := New("SET a = 'x;y', b:=1 -- c", true)
	var got []string
	for {
		k, _ := l.Next()
		if k == End {
			break
		}
		got = append(got, l.Text())
	}
	assert.Equal(t, []string{"SET", "a", "=", "'x;y'", ",", "b", ":", "=", "1"}, got)
	assert.Equal(t, "", l.Text(), "at the end")
	var zero Lexer
	assert.Equal(t, "", zero.Text())
}
