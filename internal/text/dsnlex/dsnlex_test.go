package dsnlex

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGuess(t *testing.T) {
	for s, want := range map[string]Form{
		"sqlserver://sa:p@db/inst":             FormURL,
		" jdbc:sqlserver://db;user=sa":         FormURL,
		"ODBC:server=db;pwd={x}":               FormODBC,
		"server=db;user id=sa":                 FormADO,
		"user id=sa":                           FormKeyValue,
		"host=db retryExec={1205:3;1222:2}":    FormKeyValue, // the ';' is inside braces
		"host=db password='a;b'":               FormKeyValue,
		"app:pw@tcp(db:3306)/shop?parseTime=1": FormMySQL,
		"":                                     FormMySQL,
	} {
		assert.Equal(t, want, Guess(s), "Guess(%q)", s)
	}
}

func TestUserinfoEnd(t *testing.T) {
	s := "sa:S3c@ret/x@db/inst"
	assert.Equal(t, 6, userinfoEnd(s, false), "a URL: the last '@' before the first '/' after the first '@'")
	assert.Equal(t, 12, userinfoEnd(s, true), "MySQL: the last '@' before the last '/'")
	assert.Equal(t, -1, userinfoEnd("db/inst", false))
	assert.True(t, knownScheme("JDBC:SqlServer"))
	assert.False(t, knownScheme("app"))
}

func TestClosingBraceAndAtomEnd(t *testing.T) {
	end, ok := closingBrace("{{a};{b}}c", 0)
	assert.True(t, ok)
	assert.Equal(t, 8, end)
	_, ok = closingBrace("{{a}", 0)
	assert.False(t, ok)
	assert.Equal(t, 6, atomEnd(`"a""b"c`, 0))
	assert.Equal(t, 5, atomEnd(`'a\'b`, 0), "not closed: the end of the text")
}
