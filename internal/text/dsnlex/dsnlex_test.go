package dsnlex

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	assert.Equal(t, 6, UserinfoEnd(s, false), "a URL: the last '@' before the first '/' after the first '@'")
	assert.Equal(t, 12, UserinfoEnd(s, true), "MySQL: the last '@' before the last '/'")
	assert.Equal(t, -1, UserinfoEnd("db/inst", false))
	assert.True(t, KnownScheme("JDBC:SqlServer"))
	assert.False(t, KnownScheme("app"))
}

// pairs reads every pair of a key=value DSN as a caller of NextPair does.
func pairs(s string, braced func(string) bool) []Pair {
	var out []Pair
	for i := SkipSpace(s, 0); i < len(s); i = SkipSpace(s, i) {
		p, ok := NextPair(s, i, braced)
		if !ok {
			break
		}
		out = append(out, p)
		if p.Value.Fault != NoFault {
			break
		}
		i = p.Value.End
	}
	return out
}

func TestNextPair(t *testing.T) {
	s := ` host = db  password='a b\'c' path=C:\\x\ y retryExec={1205:3 x} dbname=`
	ours := func(key string) bool { return key == "retryExec" }
	got := pairs(s, ours)
	require.Len(t, got, 5)
	for i, want := range [][2]string{{"host", "db"}, {"password", "a b'c"}, {"path", `C:\x y`}, {"retryExec", "1205:3 x"}, {"dbname", ""}} {
		assert.Equal(t, want[0], got[i].Key)
		assert.Equal(t, want[1], got[i].Value.Text, "the value of %s", want[0])
		assert.Equal(t, NoFault, got[i].Value.Fault)
	}
	assert.Equal(t, 1, got[0].Start)
	assert.Equal(t, "password='a b\\'c'", s[got[1].Start:got[1].Value.End])

	got = pairs("retryExec={1205:3 x", nil)
	require.Len(t, got, 1)
	assert.Equal(t, "{1205:3", got[0].Value.Text, "braces are crl's only: without braced, the value is bare")

	got = pairs("a=1 retryExec={1205:3 x", ours)
	require.Len(t, got, 2)
	assert.Equal(t, Unclosed, got[1].Value.Fault)
	assert.Empty(t, got[1].Value.Text, "no text for an unclosed brace")
	assert.Equal(t, 14, got[1].Value.At, "the fault is where the brace opens")

	got = pairs("password='a b", nil)
	require.Len(t, got, 1)
	assert.Equal(t, Unclosed, got[0].Value.Fault)
	assert.Equal(t, 9, got[0].Value.At)

	_, ok := NextPair("no pair here", 0, nil)
	assert.False(t, ok)
}

func TestADOValue(t *testing.T) {
	for _, tc := range []struct {
		s     string
		want  Value
		after string // s from End on
	}{
		{"= {{1205:3};{1222:2}} ;x", Value{Text: "{1205:3};{1222:2}"}, ";x"},
		{`="a;""b" ;x`, Value{Text: `a;"b`}, ";x"},
		{"= 1205:3 ;x", Value{Text: "1205:3", Bare: true}, ";x"},
		{"=1205:3", Value{Text: "1205:3", Bare: true}, ""},
		{"= {1205:3", Value{Fault: Unclosed, At: 2}, ""},
		{`= "1205:3`, Value{Fault: Unclosed, At: 2}, ""},
		{"={1205:3} x;", Value{Fault: Trailing, At: 10}, ""},
	} {
		got := ADOValue(tc.s, 1)
		if tc.want.Fault == NoFault {
			assert.Equal(t, tc.after, tc.s[got.End:], "ADOValue(%q).End", tc.s)
			got.End = 0
		}
		assert.Equal(t, tc.want, got, "ADOValue(%q)", tc.s)
	}
}

func TestADODriver(t *testing.T) {
	s := `server="a;b";pwd=x`
	end, inQuote := ADOKeyEnd(s, 0, false)
	assert.Equal(t, 6, end)
	assert.False(t, inQuote)
	vend := ADODriverValueEnd(s, end+1, false, inQuote)
	assert.Equal(t, 12, vend, "a ';' inside double quotes does not end an ADO value")
	assert.Equal(t, "a;b", ADODriverValue(s[end+1:vend], false))

	s = "pwd={a;b}}c};server=db"
	end, _ = ADOKeyEnd(s, 0, true)
	vend = ADODriverValueEnd(s, end+1, true, false)
	assert.Equal(t, "pwd={a;b}}c}", s[:vend])
	assert.Equal(t, "a;b}c", ADODriverValue(s[end+1:vend], true))

	end, inQuote = ADOKeyEnd(`a"=b;c`, 0, false)
	assert.Equal(t, 6, end, "a double quote in a key runs on")
	assert.True(t, inQuote)
}

func TestQueryAndMySQLParams(t *testing.T) {
	base, query, frag, ok := Query("postgres://db/shop?a=1&b=2#f")
	assert.True(t, ok)
	assert.Equal(t, []string{"postgres://db/shop", "a=1&b=2", "#f"}, []string{base, query, frag})
	_, _, _, ok = Query("postgres://db/shop")
	assert.False(t, ok)

	s := "u:p@tcp(h)/db?retryProperties=/a/b&loc=UTC"
	sep, end, ok := NextMySQLParam(s, 0)
	require.True(t, ok)
	assert.Equal(t, "?retryProperties=/a/b", s[sep:end])
	sep, end, ok = NextMySQLParam(s, sep+1)
	require.True(t, ok)
	assert.Equal(t, "&loc=UTC", s[sep:end])
	_, _, ok = NextMySQLParam(s, sep+1)
	assert.False(t, ok)
}

func TestValueEnd(t *testing.T) {
	for _, tc := range []struct {
		s    string
		f    Form
		want string
	}{
		{`"a;""b";c`, FormADO, `"a;""b"`},
		{"{a;b}}c};d", FormODBC, "{a;b}}c}"},
		{"a b&c", FormURL, "a b"},
		{`'a b\'c' d=1`, FormKeyValue, `'a b\'c'`},
		{"a b c d=1", FormKeyValue, "a b c"},
		{"a b", FormKeyValue, "a b"},
	} {
		assert.Equal(t, tc.want, tc.s[:ValueEnd(tc.s, 0, tc.f)], "ValueEnd(%q, %d)", tc.s, tc.f)
	}
	assert.Equal(t, "password", KeyBefore("x;password =", 2, 11))
}

func TestClosingBraceAndAtomEnd(t *testing.T) {
	end, ok := ClosingBrace("{{a};{b}}c", 0)
	assert.True(t, ok)
	assert.Equal(t, 8, end)
	_, ok = ClosingBrace("{{a}", 0)
	assert.False(t, ok)
	assert.Equal(t, 6, AtomEnd(`"a""b"c`, 0))
	assert.Equal(t, 5, AtomEnd(`'a\'b`, 0), "not closed: the end of the text")
}
