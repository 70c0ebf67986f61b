package config

import (
	"testing"

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
