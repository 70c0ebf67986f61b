package config

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

var fuzzDrivers = [...]string{"sqlserver", "mysql", "pgx", "other"}

// FuzzParseDSN checks that no DSN makes ParseDSN panic, and that the
// driver's DSN it returns carries no setting any more (parsing it again
// finds none and changes nothing).
func FuzzParseDSN(f *testing.F) {
	for _, s := range []string{
		"server=h;retryExec={1205:3;1222:2,1};user id=sa",
		"server=h;retryExec={{1205:3};{1222:2}};password=\"a;b\"",
		"odbc:server=h;password={a;b}}c};retryExec={1205:3}",
		"sqlserver://sa:p@h/inst?retryExec={1205:3}&retryConn=%2B4060&database=d#x",
		"u:p@tcp(h:3306)/db?retryExec={1213:3,1}&retryProperties=/a/b&loc=UTC",
		"postgres://u@h/db?retryBudget=max=10,earn=0.1&sslmode=disable",
		"host=h retryExec='{40001:3,1}' retryBudget={max=1} dbname=d",
		"server=h;connectRetryCount=300",
		"retryExec={",
		"?&retryExec=&",
	} {
		for i := range fuzzDrivers {
			f.Add(uint8(i), s)
		}
	}
	f.Fuzz(func(t *testing.T, d uint8, dsn string) {
		driver := fuzzDrivers[int(d)%len(fuzzDrivers)]
		c, out, err := ParseDSN(driver, dsn)
		if err != nil {
			return
		}
		_, _ = c.Policy()
		c2, out2, err := ParseDSN(driver, out)
		if err != nil {
			t.Fatalf("ParseDSN(%q, %q) gave %q, which does not parse: %v", driver, dsn, out, err)
		}
		require.Zero(t, c2.set, "ParseDSN(%q, %q) gave %q, which still holds settings %+v", driver, dsn, out, c2)
		require.Equal(t, out, out2, "ParseDSN(%q, %q) gave %q, which ParseDSN changes again", driver, dsn, out)
	})
}

// FuzzParseProperties checks that no file makes ParseProperties panic, and
// that what it accepts compiles to a Policy.
func FuzzParseProperties(f *testing.F) {
	for _, s := range []string{
		"# c\n!c\nretryExec={1205:3,1}\nretryExec = {1222:2,1}\nretryConn : {+4060}\n",
		"retryExec=\\\n  {1205:3,1}\nconnectRetryCount 3\nretryBudget=max=5\n",
		"loginTimeout=abc\n",
		"retryFoo=1\n",
		"\uFEFFretryExec=\\u007b1205:3,1}\\",
		"queryTimeout=0\nretryRefresh=off\nretryJitter=equal\nconnectRetryInterval=1.5\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		c, err := ParseProperties("fuzz.properties", []byte(src))
		if err != nil {
			return
		}
		if _, err := c.Policy(); err != nil {
			t.Fatalf("ParseProperties(%q) accepted settings whose Policy fails: %v", src, err)
		}
	})
}

// readsAs is the fuzz target's own reading of a key as the eye reads it,
// written apart from foldKey: invisible characters (format characters,
// combining marks) dropped, fullwidth forms and the best-known Cyrillic,
// Greek and Latin look-alikes replaced by the ASCII letter they imitate,
// lower-cased.
func readsAs(key string) string {
	const pairs = "аa вb еe ёe кk мm нh оo рp сc тt уy хx ѕs іi јj һh ԁd ԛq ԝw ӏl αa βb εe ιi κk νv οo ρp τt υu χx ωw ıi ſs ℓl"
	fold := map[rune]rune{}
	for _, p := range strings.Fields(pairs) {
		r := []rune(p)
		fold[r[0]] = r[1]
	}
	var b strings.Builder
	for _, r := range key {
		switch {
		case unicode.In(r, unicode.Cf, unicode.Mn, unicode.Me):
			continue
		case r >= 0xFF01 && r <= 0xFF5E:
			r -= 0xFEE0
		}
		r = unicode.ToLower(r)
		if l, ok := fold[r]; ok {
			r = l
		}
		b.WriteRune(r)
	}
	return b.String()
}

// FuzzLookalikeKey checks that no key that reads as one of ours
// (readsAs) passes through to the driver in any DSN form: ParseDSN
// either applies it as ours or returns an error naming the key it
// imitates. It is seeded with look-alikes of issue 28 (Cyrillic letters,
// a zero-width space).
func FuzzLookalikeKey(f *testing.F) {
	for _, key := range []string{"r\u0435tr\u0443Exec", "retry\u200bExec", "r\u0435tr\u0443Conn", "\ufeffretryBudget", "retryExec", "query\u00adTimeout"} {
		for i := range lookalikeForms {
			f.Add(uint8(i), key)
		}
	}
	f.Fuzz(func(t *testing.T, form uint8, key string) {
		if !utf8.ValidString(key) {
			return
		}
		means := ""
		for _, k := range Keys() {
			if readsAs(key) == strings.ToLower(k) {
				means = k
			}
		}
		if means == "" {
			return
		}
		fm := lookalikeForms[int(form)%len(lookalikeForms)]
		switch fm.name {
		case "ADO", "ODBC":
			if strings.ContainsAny(key, ";=\"{}") {
				return
			}
		case "key=value":
			if strings.ContainsAny(key, "='\\") || strings.IndexFunc(key, unicode.IsSpace) >= 0 {
				return
			}
		case "sqlserver URL raw", "mysql":
			if strings.ContainsAny(key, "&=?#%") {
				return
			}
		}
		dsn := fm.dsn(key, "x")
		c, out, err := ParseDSN(fm.driver, dsn)
		if err != nil {
			if strings.Contains(err.Error(), means) || strings.Contains(strings.ToLower(err.Error()), strings.ToLower(means)) {
				return // an error naming the key, or its value
			}
			t.Fatalf("%s: ParseDSN(%q): %v does not name %s", fm.name, dsn, err, means)
		}
		i, _ := lookupKey(means)
		if c.set&(1<<i) == 0 {
			t.Fatalf("%s: the look-alike %q of %s passed through: ParseDSN(%q) gave %q", fm.name, key, means, dsn, out)
		}
	})
}
