package dsnlex

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

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
		assert.Equal(t, tc.want, tc.s[:valueEnd(tc.s, 0, tc.f)], "valueEnd(%q, %d)", tc.s, tc.f)
	}
	assert.Equal(t, "password", keyBefore("x;password =", 2, 11))
}

// TestPassword: the password of a URL's or a MySQL DSN's userinfo, and,
// for a scheme that may be a MySQL user name, all that either reading
// calls a password.
func TestPassword(t *testing.T) {
	for _, tc := range []struct {
		s        string
		f        Form
		password string
		rest     string // s from pairsFrom on
	}{
		{"sqlserver://sa:p@ss@db/inst?x=1", FormURL, "p@ss", "@db/inst?x=1"},
		{" postgres://u@db/shop", FormURL, "", "@db/shop"},
		{"app://x:y@db/shop", FormURL, "//x:y", "@db/shop"},
		{"u:s3cr/t@tcp(db)/shop?a=1", FormMySQL, "s3cr/t", "@tcp(db)/shop?a=1"},
		{"tcp(db)/shop", FormMySQL, "", "tcp(db)/shop"},
		{"server=db;password=x", FormADO, "", "server=db;password=x"},
	} {
		start, end, from := Password(tc.s, tc.f)
		assert.Equal(t, tc.password, tc.s[start:end], "Password(%q)", tc.s)
		assert.Equal(t, tc.rest, tc.s[from:], "Password(%q): the pairs from", tc.s)
	}
}

// TestValues: every '=' may end a key, and each value runs as far as
// valueEnd reads it.
func TestValues(t *testing.T) {
	s := `server=db;pwd="a;b";x=password=y;token = {t;u}}v};k=1`
	var got []string
	secret := func(key string) bool { return key == "pwd" || key == "password" || key == "token" }
	Values(s, 0, FormODBC, secret, func(start, end int) { got = append(got, s[start:end]) })
	assert.Equal(t, []string{`"a;b"`, "y", "{t;u}}v}"}, got)
}

// TestURLs: every URL that free text quotes, from its scheme to white
// space; "://" without a scheme is none.
func TestURLs(t *testing.T) {
	s := "dial sqlserver://sa:p@db/x failed, then ://y and pgx+x://a@b\tend"
	var got []string
	URLs(s, func(start, end int) { got = append(got, s[start:end]) })
	assert.Equal(t, []string{"sqlserver://sa:p@db/x", "pgx+x://a@b"}, got)
}
