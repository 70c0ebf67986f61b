package redact

import (
	"net/url"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/microsoft/go-mssqldb/msdsn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDSN(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// URL forms.
		{"sqlserver://sa:S3cretPass@db:1433/inst?database=shop", "sqlserver://sa:xxxxx@db:1433/inst?database=shop"},
		{"sqlserver://sa:S3cretPass@db?database=shop&retryExec={1205:3}", "sqlserver://sa:xxxxx@db?database=shop&retryExec={1205:3}"},
		{"sqlserver://db?user+id=sa&password=S3cretPass&database=shop", "sqlserver://db?user+id=sa&password=xxxxx&database=shop"},
		{"sqlserver://sa:p%40ss@db/inst", "sqlserver://sa:xxxxx@db/inst"},
		{"sqlserver://sa:S3c@ret/x@db/inst", "sqlserver://sa:xxxxx@ret/x@db/inst"}, // '@' and '/' raw: the first '/' after the first '@' bounds it
		{"sqlserver://sa@db/inst", "sqlserver://sa@db/inst"},
		{"mysql://app:S3cretPass@db/shop", "mysql://app:xxxxx@db/shop"},
		{"postgres://app:S3cretPass@db:5432/shop?sslmode=disable", "postgres://app:xxxxx@db:5432/shop?sslmode=disable"},
		{"postgresql://db/shop?user=app&password=S3cretPass&sslmode=disable", "postgresql://db/shop?user=app&password=xxxxx&sslmode=disable"},
		{"postgres://app:S3c@ret@db/shop", "postgres://app:xxxxx@db/shop"},
		{"jdbc:sqlserver://db;user=sa;password=S3cretPass", "jdbc:sqlserver://db;user=sa;password=xxxxx"},
		{"sqlserver://db?accessToken=eyJ0eXAi.S3cret&database=d", "sqlserver://db?accessToken=xxxxx&database=d"},
		{"app://S3cretPass@db:3306/shop", "app:xxxxx@db:3306/shop"}, // a MySQL DSN whose password starts with //
		// ADO.
		{"server=db;user id=sa;password=S3cretPass;database=shop", "server=db;user id=sa;password=xxxxx;database=shop"},
		{"Server=db;User ID=sa;Password = S3cret Pass ;Database=shop", "Server=db;User ID=sa;Password = xxxxx;Database=shop"},
		{`server=db;password="S3c;ret""Pass";database=shop`, `server=db;password=xxxxx;database=shop`},
		{"server=db;PWD=S3cretPass", "server=db;PWD=xxxxx"},
		{"server=db;fedauth=ActiveDirectoryServicePrincipal;user id=app;password=S3cretPass;retryExec={1205:3;1222:2,1}", "server=db;fedauth=ActiveDirectoryServicePrincipal;user id=app;password=xxxxx;retryExec={1205:3;1222:2,1}"},
		{"password=S3cret Pass", "password=xxxxx"}, // one ADO pair, read as key=value: the space does not cut it
		// ODBC.
		{"odbc:server=db;uid=sa;pwd={S3c;ret}}Pass};database=shop", "odbc:server=db;uid=sa;pwd=xxxxx;database=shop"},
		{"odbc:server=db;PWD=S3cretPass", "odbc:server=db;PWD=xxxxx"},
		// MySQL.
		{"app:S3cretPass@tcp(db:3306)/shop?parseTime=true", "app:xxxxx@tcp(db:3306)/shop?parseTime=true"},
		{"app:S3cretPass@db:3306/shop", "app:xxxxx@db:3306/shop"},
		{"app:S3c@ret/Pass@tcp(db)/shop?retryProperties=/etc/crl.properties", "app:xxxxx@tcp(db)/shop?retryProperties=/etc/crl.properties"},
		{"app:S3cretPass@/shop", "app:xxxxx@/shop"},
		{"root@tcp(127.0.0.1:3306)/test?parseTime=true&allowCleartextPasswords=true", "root@tcp(127.0.0.1:3306)/test?parseTime=true&allowCleartextPasswords=true"},
		// PostgreSQL key=value.
		{"host=db user=app password=S3cretPass dbname=shop", "host=db user=app password=xxxxx dbname=shop"},
		{`host=db password='S3c ret\'Pass' dbname=shop`, "host=db password=xxxxx dbname=shop"},
		{"host=db sslpassword=S3cretPass sslmode=verify-full", "host=db sslpassword=xxxxx sslmode=verify-full"},
		{"host=db retryExec={1205:3;1222:2,1} password=S3cretPass", "host=db retryExec={1205:3;1222:2,1} password=xxxxx"},
		// Pieces of a DSN, as config's errors quote them.
		{"{1205:3;password=S3c…", "{1205:3;password=xxxxx"},
		// Nothing secret.
		{"", ""},
		{"{1205:3,1}", "{1205:3,1}"},
		{"server=db;user id=sa", "server=db;user id=sa"},
	} {
		got := DSN(tc.in)
		assert.Equal(t, tc.want, got, "DSN(%q)", tc.in)
		assert.NotContains(t, got, "S3c", "DSN(%q)", tc.in)
	}
}

func TestIn(t *testing.T) {
	// A piece of an ADO string, told from its form rather than guessed.
	assert.Equal(t, "{1205:3;password=xxxxx;database=d", In("{1205:3;password=S3cret Pass;database=d", FormADO))
	assert.Equal(t, "{1205:3 password=xxxxx dbname=d", In("{1205:3 password=S3cret dbname=d", FormKeyValue))
}

func TestSecrets(t *testing.T) {
	assert.ElementsMatch(t, []string{"p%40ss", "p@ss"}, Secrets("sqlserver://sa:p%40ss@db/inst"))
	assert.ElementsMatch(t, []string{`"a;b"`, "a;b"}, Secrets(`server=db;password="a;b"`))
	assert.Empty(t, Secrets("server=db;user id=sa"))
}

// plantings are the ways a password is written in a DSN of each form, with
// the driver's own parser telling whether it reads that password back (a
// DSN no driver reads the password from is no test of the redaction).
var plantings = [...]struct {
	name  string
	plant func(pw string) string
	reads func(dsn string) (string, bool)
}{
	{"sqlserver URL", func(pw string) string {
		return "sqlserver://" + url.UserPassword("sa", pw).String() + "@db:1433/inst?database=shop&retryExec={1205:3}"
	}, readURL},
	{"raw URL", func(pw string) string { return "mysql://app:" + pw + "@db/shop" }, readURL},
	{"URL query", func(pw string) string {
		return "sqlserver://db?user+id=sa&password=" + url.QueryEscape(pw) + "&database=shop"
	}, readMSSQL},
	{"postgres URL", func(pw string) string {
		return "postgres://" + url.UserPassword("app", pw).String() + "@db:5432/shop?sslmode=disable"
	}, readPG},
	{"ADO", func(pw string) string {
		return "server=db;user id=sa;password=" + quoteADO(pw) + ";database=shop"
	}, readMSSQL},
	{"ODBC", func(pw string) string {
		return "odbc:server=db;uid=sa;pwd={" + strings.ReplaceAll(pw, "}", "}}") + "};database=shop"
	}, readMSSQL},
	{"MySQL", func(pw string) string { return "app:" + pw + "@tcp(db:3306)/shop?parseTime=true" }, readMySQL},
	{"MySQL without tcp()", func(pw string) string { return "app:" + pw + "@db:3306/shop" }, func(dsn string) (string, bool) {
		// The driver refuses the form; it reads the userinfo as it does with tcp().
		return readMySQL(strings.Replace(dsn, "@db:3306/", "@tcp(db:3306)/", 1))
	}},
	{"key=value", func(pw string) string {
		return "host=db user=app password=" + quoteKeyValue(pw) + " dbname=shop"
	}, readPG},
}

func readURL(dsn string) (string, bool) {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return "", false
	}
	return u.User.Password()
}

func readMSSQL(dsn string) (string, bool) {
	c, err := msdsn.Parse(dsn)
	return c.Password, err == nil
}

func readMySQL(dsn string) (string, bool) {
	c, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", false
	}
	return c.Passwd, true
}

func readPG(dsn string) (string, bool) {
	c, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return "", false
	}
	return c.Password, true
}

func quoteADO(pw string) string {
	if strings.ContainsAny(pw, `;"`) || strings.TrimSpace(pw) != pw {
		return `"` + strings.ReplaceAll(pw, `"`, `""`) + `"`
	}
	return pw
}

func quoteKeyValue(pw string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(pw) + "'"
}

// FuzzRedactDSN plants a password in a DSN of every form, as its driver
// reads it, and checks that the redacted DSN holds it in no form: neither
// as the driver reads it nor as it is written.
func FuzzRedactDSN(f *testing.F) {
	for _, pw := range []string{"S3cretPass", "p@ss/w:rd", "a;b}c\"d'e", " spaced out ", "x&password=y", "//S3cret", "p%41ss?#"} {
		for i := range plantings {
			f.Add(uint8(i), pw)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, pw string) {
		p := plantings[int(which)%len(plantings)]
		dsn := p.plant(pw)
		got, ok := p.reads(dsn)
		if !ok || got != pw || len(strings.TrimSpace(pw)) < 4 {
			return // not a password this form carries, or too short to tell from the rest
		}
		red := DSN(dsn)
		// What the redacted DSN holds whatever the password: the rest of
		// the DSN, and the mask.
		neutral := DSN(p.plant("N3utral"))
		for _, s := range []string{pw, strings.TrimSpace(pw), written(dsn, p.plant(""))} {
			if len(s) < 4 || strings.Contains(p.plant(""), s) || strings.Contains(neutral, s) {
				continue // the rest of the DSN holds it anyway
			}
			require.NotContains(t, red, s, "%s: DSN(%q) = %q", p.name, dsn, red)
		}
	})
}

// written returns the part of dsn that differs from empty, the same DSN
// with an empty password: the password as dsn writes it.
func written(dsn, empty string) string {
	i := 0
	for i < len(dsn) && i < len(empty) && dsn[i] == empty[i] {
		i++
	}
	j := 0
	for j < len(dsn)-i && j < len(empty)-i && dsn[len(dsn)-1-j] == empty[len(empty)-1-j] {
		j++
	}
	return dsn[i : len(dsn)-j]
}
