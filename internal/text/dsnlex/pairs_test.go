package dsnlex

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// retryExec is the one key of the callers' own in these tests.
func retryExec(key string) bool { return strings.EqualFold(key, "retryExec") }

// TestPairsKeyValue: pairs read as pgx reads them, crl's values may be
// braced, and a quote of the driver's left open ends the reading without
// an error.
func TestPairsKeyValue(t *testing.T) {
	s := ` host = db  password='a b\'c' path=C:\\x\ y retryExec={1205:3 x} dbname=`
	got, err := Pairs(s, FormKeyValue, retryExec)
	require.NoError(t, err)
	require.Len(t, got, 5)
	for i, want := range [][2]string{{"host", "db"}, {"password", "a b'c"}, {"path", `C:\x y`}, {"retryExec", "1205:3 x"}, {"dbname", ""}} {
		assert.Equal(t, want[0], got[i].Key)
		assert.Equal(t, want[1], got[i].Value, "the value of %s", want[0])
		assert.True(t, got[i].Eq)
	}
	assert.Equal(t, 1, got[0].Start)
	assert.Equal(t, "password='a b\\'c'", s[got[1].Start:got[1].End])
	assert.False(t, got[1].Bare, "quoted")
	assert.True(t, got[2].Bare, "bare")

	got, err = Pairs("retryExec={1205:3 x", FormKeyValue, nil)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, "{1205:3", got[0].Value, "braces are crl's only: without ours, the value is bare")
	assert.Equal(t, Pair{Key: "x", Start: 18, End: 19}, got[1], "the rest without '=' is one part of text")

	got, err = Pairs("a=1 retryExec={1205:3 x", FormKeyValue, retryExec)
	require.Len(t, got, 1, "the parts before the fault")
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, Error{Key: "retryExec", At: 14, Unclosed: true}, *e, "the fault is where the brace opens")
	assert.NotContains(t, err.Error(), "1205", "the error quotes none of the DSN")

	got, err = Pairs("host=h password='a b", FormKeyValue, retryExec)
	require.NoError(t, err, "the driver's value: the driver judges it")
	require.Len(t, got, 2)
	assert.Equal(t, "password='a b", "host=h password='a b"[got[1].Start:got[1].End], "read to the end")

	got, err = Pairs("no pair here", FormKeyValue, nil)
	require.NoError(t, err)
	assert.Equal(t, []Pair{{Key: "no pair here", End: 12}}, got)
}

// TestPairsADO: the driver's parts are split as go-mssqldb splits them,
// crl's values read braced, quoted or bare; the faults of crl's values
// are errors.
func TestPairsADO(t *testing.T) {
	s := ` server="a;b" ; retryExec = {{1205:3};{1222:2}} ;;user id=sa;retryExec=1205:3 `
	got, err := Pairs(s, FormADO, retryExec)
	require.NoError(t, err)
	want := []Pair{
		{Key: "server", Value: "a;b", Eq: true},
		{Key: "retryExec", Value: "{1205:3};{1222:2}", Eq: true},
		{Key: ""},
		{Key: "user id", Value: "sa", Eq: true},
		{Key: "retryExec", Value: "1205:3", Eq: true, Bare: true},
	}
	texts := []string{` server="a;b" `, ` retryExec = {{1205:3};{1222:2}} `, "", "user id=sa", "retryExec=1205:3 "}
	require.Len(t, got, len(want))
	for i := range want {
		assert.Equal(t, texts[i], s[got[i].Start:got[i].End], "part %d as written", i)
		got[i].Start, got[i].End = 0, 0
		assert.Equal(t, want[i], got[i], "part %d", i)
	}

	for _, tc := range []struct {
		s    string
		want Error
	}{
		{"server=h;retryExec= {1205:3", Error{Key: "retryExec", At: 20, Unclosed: true}},
		{`server=h;retryExec= "1205:3`, Error{Key: "retryExec", At: 20, Unclosed: true}},
		{"server=h;retryExec={1205:3} x;", Error{Key: "retryExec", At: 28}},
	} {
		got, err := Pairs(tc.s, FormADO, retryExec)
		var e *Error
		require.ErrorAs(t, err, &e, tc.s)
		assert.Equal(t, tc.want, *e, tc.s)
		assert.Len(t, got, 1, "the parts before the fault")
	}

	got, err = Pairs("odbc:pwd={a;b}}c};retryExec={1205:3;1222:2}", FormODBC, retryExec)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, 5, got[0].Start, "after the odbc: prefix")
	assert.Equal(t, "a;b}c", got[0].Value)
	assert.Equal(t, "1205:3;1222:2", got[1].Value)
}

// TestPairsQuery: a URL's query and a MySQL DSN's parameters, as written.
func TestPairsQuery(t *testing.T) {
	s := "postgres://db/shop?a=1&&b&retryExec=%7B1205:3%7D#f"
	got, err := Pairs(s, FormURL, retryExec)
	require.NoError(t, err)
	assert.Equal(t, []Pair{
		{Key: "a", Value: "1", Eq: true, Start: 19, End: 22},
		{Start: 23, End: 23},
		{Key: "b", Start: 24, End: 25},
		{Key: "retryExec", Value: "%7B1205:3%7D", Eq: true, Start: 26, End: 48},
	}, got)
	assert.Equal(t, "#f", s[got[3].End:])
	got, _ = Pairs("postgres://db/shop", FormURL, nil)
	assert.Empty(t, got)

	s = "u:p@tcp(h)/db?retryProperties=/a/b&loc=UTC"
	got, _ = Pairs(s, FormMySQL, nil)
	require.Len(t, got, 2)
	assert.Equal(t, "retryProperties=/a/b", s[got[0].Start:got[0].End])
	assert.Equal(t, "/a/b", got[0].Value)
	assert.Equal(t, "loc=UTC", s[got[1].Start:got[1].End])
	assert.Equal(t, byte('&'), s[got[1].Start-1], "the separator before it")
}

func TestADOValue(t *testing.T) {
	for _, tc := range []struct {
		s     string
		want  value
		after string // s from end on
	}{
		{"= {{1205:3};{1222:2}} ;x", value{text: "{1205:3};{1222:2}"}, ";x"},
		{`="a;""b" ;x`, value{text: `a;"b`}, ";x"},
		{"= 1205:3 ;x", value{text: "1205:3", bare: true}, ";x"},
		{"=1205:3", value{text: "1205:3", bare: true}, ""},
		{"= {1205:3", value{fault: unclosed, at: 2}, ""},
		{`= "1205:3`, value{fault: unclosed, at: 2}, ""},
		{"={1205:3} x;", value{fault: trailing, at: 10}, ""},
	} {
		got := adoValue(tc.s, 1)
		if tc.want.fault == noFault {
			assert.Equal(t, tc.after, tc.s[got.end:], "adoValue(%q).end", tc.s)
			got.end = 0
		}
		assert.Equal(t, tc.want, got, "adoValue(%q)", tc.s)
	}
}

func TestADODriver(t *testing.T) {
	s := `server="a;b";pwd=x`
	end, inQuote := adoKeyEnd(s, 0, false)
	assert.Equal(t, 6, end)
	assert.False(t, inQuote)
	vend := adoDriverValueEnd(s, end+1, false, inQuote)
	assert.Equal(t, 12, vend, "a ';' inside double quotes does not end an ADO value")
	assert.Equal(t, "a;b", adoDriverValue(s[end+1:vend], false))

	s = "pwd={a;b}}c};server=db"
	end, _ = adoKeyEnd(s, 0, true)
	vend = adoDriverValueEnd(s, end+1, true, false)
	assert.Equal(t, "pwd={a;b}}c}", s[:vend])
	assert.Equal(t, "a;b}c", adoDriverValue(s[end+1:vend], true))

	end, inQuote = adoKeyEnd(`a"=b;c`, 0, false)
	assert.Equal(t, 6, end, "a double quote in a key runs on")
	assert.True(t, inQuote)
}

// FuzzPairs checks that no text makes Pairs panic, and that in every
// form its parts stand in order inside the text, each ending before the
// next begins, so that a caller can cut them out.
func FuzzPairs(f *testing.F) {
	for _, s := range []string{
		"server=h;retryExec={1205:3;1222:2,1};user id=sa",
		"odbc:server=h;password={a;b}}c};retryExec={1205:3}",
		"sqlserver://sa:p@h/inst?retryExec={1205:3}&retryConn=%2B4060&database=d#x",
		"u:p?a&s@tcp(h:3306)/db?retryExec={1213:3,1}&loc=UTC",
		"host=h retryExec='{40001:3,1}' retryBudget={max=1} dbname=d password='a",
		"retryExec={",
		`server="a;b";retryExec="x""y"`,
	} {
		for form := FormGuess; form <= FormKeyValue; form++ {
			f.Add(uint8(form), s)
		}
	}
	f.Fuzz(func(t *testing.T, form uint8, s string) {
		got, err := Pairs(s, Form(form%uint8(FormKeyValue+1)), retryExec)
		if e, ok := err.(*Error); ok {
			require.True(t, e.At >= 0 && e.At < len(s), "At %d out of %q", e.At, s)
		} else {
			require.NoError(t, err)
		}
		prev := 0
		for _, p := range got {
			require.True(t, prev <= p.Start && p.Start <= p.End && p.End <= len(s), "%+v after %d in %q", p, prev, s)
			prev = p.End
		}
	})
}
