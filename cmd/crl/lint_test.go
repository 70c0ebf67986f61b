package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/internal/tables/keywords"
)

// A filter word one edit from a statement keyword is a misspelling: the
// rule fires for no statement, and check and explain fail naming the word,
// the keyword it probably means and every keyword a filter takes.
func TestLintMisspeltFilterWordIsAnError(t *testing.T) {
	isolate(t)
	list := strings.Join(keywords.All(), ", ")
	for _, tc := range []struct{ rules, want string }{
		{"{1213:3,5s*2:selct}", `crl: rule {1213:3,5s*2:selct}: the filter word "selct" is no statement keyword, so the rule fires for no statement: did you mean select? A filter takes the first keyword of a statement: ` + list},
		{"{1205,1222:3,1+0:insert,updtae}", `crl: rule {1205,1222:3,1s+0:insert,updtae}: the filter word "updtae" is no statement keyword, so the rule fires for no statement: did you mean update? A filter takes the first keyword of a statement: ` + list},
	} {
		for _, cmd := range []string{"check", "explain"} {
			code, out, errOut := runCRL(cmd, tc.rules)
			assert.Equal(t, 1, code, "%s %s", cmd, tc.rules)
			assert.Equal(t, tc.want+"\n", errOut, "%s %s", cmd, tc.rules)
			assert.NotContains(t, out, "ok:", "%s %s", cmd, tc.rules)
		}
	}
	// In a properties file, as in a DSN: check reads what the library reads.
	code, _, errOut := runCRL("check", "-dsn", "root@tcp(127.0.0.1:3306)/db?retryExec={1213:3,1:selct}")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `the filter word "selct" is no statement keyword`)
}

// Statement keywords of every family are filter words without a word
// from check; any other word may be a procedure's or a schema's name
// (a bare procedure call's first word), so it is a warning, exit 0.
func TestLintOtherFilterWordIsAWarning(t *testing.T) {
	isolate(t)
	code, out, errOut := runCRL("check", "{1205:3,1:select,insert,update,delete,merge,with,exec,execute,call,replace,values,show,create,truncate,upsert}")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "warning:")

	for _, word := range []string{"dbo", "transfer", "updates", "shop"} {
		code, out, errOut = runCRL("check", "{1205:3,1:"+word+"}")
		require.Equal(t, 0, code, "%s: %s", word, errOut)
		assert.Contains(t, out, `warning: rule {1205:3,1s+2s:`+word+`}: the filter word "`+word+`" is no statement keyword: the rule fires only for a statement whose first word is `+word+
			`, such as a call of a procedure by its bare name (dbo.Transfer begins with dbo); if `+word+` names no procedure or schema, the rule fires for no statement`+"\n", word)
		assert.Contains(t, out, "ok: 1 statement rule(s)", word)
	}
}

// A wait longer than a minute is a warning with the rule's wait table;
// one longer than 65535 s (the longest loginTimeout) is an error. A wait
// that queryTimeout refuses is never taken, so it is neither.
func TestLintWaits(t *testing.T) {
	isolate(t)
	code, out, errOut := runCRL("check", "{1213:3,1ms*1000}")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "warning: rule {1213:3,1ms*1000}: retry 3 waits 16m40s, longer than 1m0s: the statement holds its connection, and its caller waits, that long\n"+
		"token  retry  wait    elapsed     filter             note\n"+
		"1213   1      1ms     1ms         (every statement)  \n"+
		"1213   2      1s      1.001s      (every statement)  \n"+
		"1213   3      16m40s  16m41.001s  (every statement)  \n"+
		"ok: 1 statement rule(s)")

	// explain prints the warning once, its table being the one it prints.
	code, out, errOut = runCRL("explain", "{1213:3,1ms*1000}")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "warning: rule {1213:3,1ms*1000}: retry 3 waits 16m40s")
	assert.Equal(t, 1, strings.Count(out, "token  retry"), out)

	for _, args := range [][]string{
		{"check", "-querytimeout", "60", "{1213:3,1ms*1000}"}, // refused: never waited
		{"check", "{1213:3,1m+0}"},                            // a minute is not longer than a minute
		{"check", "{1205:3,2*2}"},
	} {
		code, out, errOut = runCRL(args...)
		require.Equal(t, 0, code, "%q: %s", args, errOut)
		assert.NotContains(t, out, "warning:", "%q", args)
	}

	for _, cmd := range []string{"check", "explain"} {
		code, _, errOut = runCRL(cmd, "{1213:3,1*100000}")
		assert.Equal(t, 1, code, cmd)
		assert.Equal(t, "crl: rule {1213:3,1s*100000}: retry 2 waits 27h46m40s (100000 s), longer than 18h12m15s (65535 s, the longest loginTimeout): "+
			"the statement would hold its connection that long; lower the initial wait, the change or the count\n", errOut, cmd)
	}
	code, _, errOut = runCRL("check", "-querytimeout", "1h", "{1213:3,1*100000}")
	require.Equal(t, 0, code, "queryTimeout refuses the 27h wait: the loop never takes it: %s", errOut)
}
