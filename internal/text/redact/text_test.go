package redact

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/microsoft/go-mssqldb/msdsn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`parse "sqlserver://app:secret@db:notaport?database=x": invalid port ":notaport" after host`,
			`parse "sqlserver://app:xxxxx@db:notaport?database=x": invalid port ":notaport" after host`},
		{"cannot parse `postgres://app:xxxxx@db/x%zz`: failed to parse as URL (parse \"postgres://app:secret@db/x%zz\": invalid URL escape \"%zz\")",
			"cannot parse `postgres://app:xxxxx@db/x%zz`: failed to parse as URL (parse \"postgres://app:xxxxx@db/x%zz\": invalid URL escape \"%zz\")"},
		{"login failed: server=db;password=secret;database=x", "login failed: server=db;password=xxxxx"},
		{"dial tcp 10.0.0.1:1433: connect: connection refused", "dial tcp 10.0.0.1:1433: connect: connection refused"},
		{"a://b c", "a://b c"},
		{"://x", "://x"},
		{"", ""},
	} {
		assert.Equal(t, tc.want, Text(tc.in), "Text(%q)", tc.in)
	}
}

// TestErrorOfDriversParseErrors: the real drivers' errors for a DSN they
// cannot read quote the password (go-mssqldb v1.8, pgx v5.5: the
// versions go.mod requires; newer ones hide it themselves); Error masks
// it and keeps the chain.
func TestErrorOfDriversParseErrors(t *testing.T) {
	_, mssqlErr := msdsn.Parse("sqlserver://app:secret@db:notaport?database=x")
	require.Error(t, mssqlErr)
	_, pgxErr := pgconn.ParseConfig("postgres://app:secret@db/x%zz")
	require.Error(t, pgxErr)
	for _, err := range []error{mssqlErr, pgxErr} {
		masked := Error(err)
		assert.NotContains(t, masked.Error(), "secret")
		if strings.Contains(err.Error(), "secret") {
			assert.Contains(t, masked.Error(), "xxxxx")
		}
		assert.ErrorIs(t, masked, err)
		var ue *url.Error
		if errors.As(err, &ue) {
			assert.True(t, errors.As(masked, &ue), "still a *url.Error underneath: %v", masked)
		}
	}
	plain := errors.New("mssql: login error")
	assert.Same(t, plain, Error(plain), "an error without a secret comes back unchanged")
	assert.Nil(t, Error(nil))
}

// FuzzErrorOfDriversParseErrors builds DSNs the real drivers cannot read
// (a port that is no number) around a password written as a URL writes
// it, and checks that Error hides it, as written and as decoded, from
// what the drivers' errors say.
func FuzzErrorOfDriversParseErrors(f *testing.F) {
	for _, pw := range []string{"S3cretPass", "p@ss/w:rd", "a;b}c\"d'e", " spaced out ", "x&pass/word", "p%41ss?#"} {
		f.Add(false, pw)
		f.Add(true, pw)
	}
	f.Fuzz(func(t *testing.T, pgx bool, pw string) {
		if len(strings.TrimSpace(pw)) < 6 || strings.Contains(pw, "=") {
			// Too short to tell from the rest of the message; or holding
			// key=value text (password=), which a message may show as a
			// key whose value is masked.
			return
		}
		u := url.URL{Scheme: "sqlserver", User: url.UserPassword("app", pw), Host: "db:notaport", RawQuery: "database=shop"}
		var err error
		if pgx {
			u.Scheme, u.Path, u.RawQuery = "postgres", "/shop", "sslmode=disable"
			_, err = pgconn.ParseConfig(u.String())
		} else {
			_, err = msdsn.Parse(u.String())
		}
		if err == nil {
			return
		}
		written := strings.TrimPrefix(u.User.String(), "app:")
		msg := Error(err).Error()
		for _, s := range []string{pw, written} {
			if len(s) >= 6 && !strings.Contains(u.Host+u.Path+u.RawQuery+u.Scheme+"app", s) {
				require.NotContains(t, msg, s, "Error(%q)", err)
			}
		}
	})
}
