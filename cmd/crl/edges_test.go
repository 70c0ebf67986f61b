package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// crl with no arguments is a command line that cannot be understood: it
// prints the help where errors go and exits 2, as go does.
func TestNoArgumentsPrintsHelpAndExitsTwo(t *testing.T) {
	isolate(t)
	code, out, errOut := runCRL()
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "Usage:")
	assert.Contains(t, errOut, "crl explain '{1205:3,2*2}'")
}

// explain without statement rules says so, instead of a table with no
// rows, and still tells the connection loop; with no retryExec at all it
// explains the default rule, and names the numbers of its classes.
func TestExplainWithoutStatementRules(t *testing.T) {
	isolate(t)
	for _, args := range [][]string{
		{"explain", "{}"},
		{"explain", "-conn", "{+4060}", "{}"},
		{"explain", "-dsn", "sqlserver://h?database=x&retryExec="},
	} {
		code, out, errOut := runCRL(args...)
		require.Equal(t, 0, code, "%q: %s", args, errOut)
		assert.Contains(t, out, "statement rules: none, so no statement is retried", "%q", args)
		assert.NotContains(t, out, "token", "%q prints no table header", args)
		assert.Contains(t, out, "connection: ", "%q", args)
	}
	for args, numbers := range map[string][2]string{
		"":                  {"class deadlock on sqlserver: 1205", "class serialization on sqlserver: 3960, 41301, 41302, 41305, 41325"},
		"u@tcp(h)/db":       {"class deadlock on mysql: 1213, 1614", "class serialization on mysql: 1020"},
		"postgres://u@h/db": {"class deadlock on postgres: 40P01", "class serialization on postgres: 40001"},
	} {
		for _, cmd := range []string{"explain", "check"} {
			code, out, errOut := runCRL(cmd, "-dsn", args)
			require.Equal(t, 0, code, "%q: %s", args, errOut)
			assert.Contains(t, out, "statement rules: the default rule {deadlock,serialization:3,100ms*2}", "%s %q", cmd, args)
			assert.Contains(t, out, numbers[0], "%s %q", cmd, args)
			assert.Contains(t, out, numbers[1], "%s %q", cmd, args)
			if cmd == "explain" {
				assert.Contains(t, out, "deadlock       3      400ms", "%q", args)
				assert.Contains(t, out, "jitter full", "%q", args)
			}
		}
	}
	code, out, errOut := runCRL("explain", "-dsn", "postgres://u@h/db", "-conn", "{+failover,throttle}", "{lockTimeout,1213:2,1}")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "class lockTimeout on postgres: 55P03")
	assert.Contains(t, out, "class failover on postgres: 25006, 57P01")
	assert.Contains(t, out, "class throttle on postgres: 53000, 53200, 53300, 53400")
	assert.NotContains(t, out, "default rule")
	assert.NotContains(t, out, "jitter")
}

// check prints the connection loop's settings in effect, as explain does:
// the DSN's, the defaults, and the JDBC driver's Azure default.
func TestCheckShowsTheConnectionSettings(t *testing.T) {
	isolate(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"check"}, "connectRetryCount 1, connectRetryInterval 10s, loginTimeout 30s"},
		{[]string{"check", "-dsn", "sqlserver://h?connectRetryCount=3&connectRetryInterval=5&loginTimeout=20"}, "connectRetryCount 3, connectRetryInterval 5s, loginTimeout 20s"},
		{[]string{"check", "-dsn", "sqlserver://h?connectRetryCount=0"}, "connectRetryCount 0 (off)"},
		{[]string{"check", "-dsn", "sqlserver://shop.database.windows.net?database=x"}, "connectRetryCount 2, connectRetryInterval 10s"},
		{[]string{"check", "-dsn", "root@tcp(127.0.0.1:3306)/db?loginTimeout=7"}, "loginTimeout 7s"},
	} {
		code, out, errOut := runCRL(tc.args...)
		require.Equal(t, 0, code, "%q: %s", tc.args, errOut)
		assert.Contains(t, out, tc.want, "%q", tc.args)
		// The same line explain prints.
		explainArgs := append([]string{"explain"}, tc.args[1:]...)
		_, explained, _ := runCRL(explainArgs...)
		assert.Contains(t, explained, tc.want, "%q", explainArgs)
	}
}

// explain says whether transactions are replayed and up to how many
// statements, from the DSN's txReplay and txReplayLimit.
func TestExplainShowsTransactionReplay(t *testing.T) {
	_, out, _ := runCRL("explain", "{1213:3,100ms}", "-driver", "mysql", "-dsn", "u@tcp(h)/d")
	assert.Contains(t, out, "transaction replay: on, transactions of up to 1000 statements")
	_, out, _ = runCRL("explain", "{1213:3,100ms}", "-driver", "mysql", "-dsn", "u@tcp(h)/d?txReplayLimit=20")
	assert.Contains(t, out, "up to 20 statements")
	_, out, _ = runCRL("explain", "{1213:3,100ms}", "-driver", "mysql", "-dsn", "u@tcp(h)/d?txReplay=off")
	assert.Contains(t, out, "transaction replay: off")
	code, _, errOut := runCRL("explain", "{1213:3,100ms}", "-driver", "mysql", "-dsn", "u@tcp(h)/d?txReplay=maybe")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `"maybe"`)
	_, _, errOut = runCRL("explain", "{1213:3,100ms}", "-driver", "mysql", "-dsn", "u@tcp(h)/d?txReplayLimit=0")
	assert.Contains(t, errOut, `txReplayLimit="0"`)
}
