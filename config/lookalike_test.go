package config

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lookalikeForms writes key=value as each DSN form writes a pair, the key
// as the reader will see it once decoded (percent-encoded in URL forms).
var lookalikeForms = []struct {
	name, driver string
	dsn          func(key, value string) string
}{
	{"sqlserver URL", "sqlserver", func(k, v string) string { return "sqlserver://h?database=x&" + url.PathEscape(k) + "=" + v }},
	{"sqlserver URL raw", "sqlserver", func(k, v string) string { return "sqlserver://h?database=x&" + k + "=" + v }},
	{"ADO", "sqlserver", func(k, v string) string { return "server=h;" + k + "=" + v + ";database=x" }},
	{"ODBC", "sqlserver", func(k, v string) string { return "odbc:server=h;" + k + "=" + v }},
	{"mysql", "mysql", func(k, v string) string { return "u@tcp(h:3306)/db?parseTime=true&" + url.PathEscape(k) + "=" + v }},
	{"postgres URL", "pgx", func(k, v string) string {
		return "postgres://u@h/db?" + url.PathEscape(k) + "=" + v + "&sslmode=disable"
	}},
	{"key=value", "pgx", func(k, v string) string { return "host=h " + k + "=" + v + " dbname=x" }},
}

// TestLookalikeKeysAreErrors: a key that reads as one of ours once its
// invisible characters are removed and its look-alike letters folded is
// an error naming it, in every form; the driver never gets it (issue 28,
// item 2).
func TestLookalikeKeysAreErrors(t *testing.T) {
	for _, tc := range []struct{ key, value, means string }{
		{"r\u0435tr\u0443Exec", "{1205:3,1}", "retryExec"}, // Cyrillic е and у
		{"retry\u200bExec", "{1205:3,1}", "retryExec"},     // zero-width space
		{"r\u0435tr\u0443Conn", "{+4060}", "retryConn"},
		{"\ufeffretryExec", "{1205:3,1}", "retryExec"},                                        // byte order mark
		{"retry\u00adBudget", "off", "retryBudget"},                                           // soft hyphen
		{"\uff52\uff45\uff54\uff52\uff59Exec", "{1205:3,1}", "retryExec"},                     // fullwidth
		{"ret\u03b3Exec", "{1205:3,1}", "retryExec"},                                          // Greek gamma
		{"query\u2060Timeout", "5", "queryTimeout"},                                           // word joiner
		{"login\u200dTim\u0435out", "5", "loginTimeout"},                                      // joiner and Cyrillic е
		{"retryExe\u0441\u200b", "{1205:3,1}", "retryExec"},                                   // trailing
		{"r\u0435\u0442ryExec", "{1205:3,1}", "retryExec"},                                    // Cyrillic т
		{"c\u043e\u043fnectRetryCount", "3", "connectRetryCount"},                             // Cyrillic о, п: an edit away
		{"retryExec\ufe0f", "{1205:3,1}", "retryExec"},                                        // variation selector
		{"\U0001d42b\U0001d41e\U0001d42d\U0001d42b\U0001d432Exec", "{1205:3,1}", "retryExec"}, // mathematical bold
	} {
		for _, f := range lookalikeForms {
			dsn := f.dsn(tc.key, tc.value)
			_, out, err := ParseDSN(f.driver, dsn)
			require.Error(t, err, "%s: %q passed through as %q", f.name, dsn, out)
			assert.True(t, errors.Is(err, ErrUnknownKey), "%s: %v", f.name, err)
			assert.Contains(t, err.Error(), tc.means, "%s: the error names the key it imitates", f.name)
			assert.Contains(t, err.Error(), strings.Trim(strconv.QuoteToASCII(tc.key), `"`), "%s: the error names the key as written", f.name)
		}
	}
	// Our own keys, and the drivers' keys, are unaffected.
	for _, f := range lookalikeForms {
		c, _, err := ParseDSN(f.driver, f.dsn("retryExec", "{1205:3,1}"))
		require.NoError(t, err, f.name)
		assert.NotZero(t, c.set, f.name)
	}
	for _, key := range []string{"lock_timeout", "connect_timeout", "application_name", "dial timeout", "connection timeout", "sslmode"} {
		_, ok := nearKey(key)
		assert.False(t, ok, key)
	}
}
