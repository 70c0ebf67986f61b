package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/internal/tables/mssqldsn"
)

// isolate runs the test in an empty working directory without
// CRL_PROPERTIES, so that no properties file is found unless the test
// writes one.
func isolate(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	chdir(t, dir)
	t.Setenv(config.EnvProperties, "")
	return dir
}

func runCRL(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestHelpExitsZero(t *testing.T) {
	isolate(t)
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}, {"check", "-h"}, {"explain", "-help"}} {
		code, out, errOut := runCRL(args...)
		assert.Equal(t, 0, code, "%q exits 0", args)
		assert.Empty(t, errOut, "%q writes nothing to stderr", args)
		for _, want := range []string{"crl check", "crl explain", "crl explain '{1205:3,2*2}'", "crl check '{1205:3,2AND2}'", "Reads the settings", "prints, for each error", "crl vet ./...", "not retried"} {
			assert.Contains(t, out, want, "%q prints the usage with examples", args)
		}
	}
}

func TestBadCommandLineExitsTwo(t *testing.T) {
	isolate(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"check", "{1205:3,1}", "{1222:3,1}"}, "one RULES argument expected"},
		{[]string{"check", "-exec", "{1205:3,1}", "{1222:3,1}"}, "given twice"},
		{[]string{"check", "-nosuchflag"}, "nosuchflag"},
		{[]string{"explain", "-querytimeout", "soon", "{1205:3,1}"}, `queryTimeout="soon": expected -1 (none), 0, or seconds such as 30 or 1.5s`},
	} {
		code, _, errOut := runCRL(tc.args...)
		assert.Equal(t, 2, code, "%q exits 2", tc.args)
		assert.Contains(t, errOut, tc.want, "%q", tc.args)
	}
}

func TestRulesAsArgument(t *testing.T) {
	isolate(t)
	code, out, errOut := runCRL("explain", "{1205:3,2*2}")
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{"properties file: none", "1205   1      2s    2s", "1205   3      8s    14s"} {
		assert.Contains(t, out, want)
	}

	code, _, errOut = runCRL("check", "{1205:3,2AND2}")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `"2AND2" is not a number`)

	// Flags before or after the rules; -conn for retryConn.
	for _, args := range [][]string{
		{"check", "{1205,1222:3,2*2:select,update}", "-conn", "{+4060}"},
		{"check", "-conn", "{+4060}", "{1205,1222:3,2*2:select,update}"},
	} {
		code, out, errOut := runCRL(args...)
		require.Equal(t, 0, code, "%q: %s", args, errOut)
		assert.Contains(t, out, "ok: 2 statement rule(s), connection rules {+4060} (added to the builtin list)", "%q", args)
	}

	code, _, errOut = runCRL("check", "-conn", "{4060:3}")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no timings")
}

func TestCheckReadsWhatTheLibraryReads(t *testing.T) {
	dir := isolate(t)
	good := filepath.Join(dir, "good.properties")
	bad := filepath.Join(dir, "bad.properties")
	require.NoError(t, os.WriteFile(good, []byte("retryExec=1205:3,5+5;1222:2,2\nretryConn=+4060,40143\n"), 0o600))
	require.NoError(t, os.WriteFile(bad, []byte("# comment\nretryExec={1205:3,2AND2}\n"), 0o600))

	t.Run("-file", func(t *testing.T) {
		code, out, errOut := runCRL("check", "-file", good)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, "properties file: "+good)
		assert.Contains(t, out, "ok: 2 statement rule(s)")

		code, _, errOut = runCRL("check", "-file", bad)
		assert.Equal(t, 1, code)
		assert.Contains(t, errOut, ":2")
		assert.Contains(t, errOut, "2AND2")
	})
	t.Run("CRL_PROPERTIES", func(t *testing.T) {
		t.Setenv(config.EnvProperties, bad)
		code, _, errOut := runCRL("check")
		assert.Equal(t, 1, code, "the file the environment names is read")
		assert.Contains(t, errOut, "2AND2")

		t.Setenv(config.EnvProperties, filepath.Join(dir, "missing.properties"))
		code, _, errOut = runCRL("check", "{1205:3,1}")
		assert.Equal(t, 1, code, "a named file that is missing fails")
		assert.Contains(t, errOut, "missing.properties")

		t.Setenv(config.EnvProperties, good)
		code, out, errOut := runCRL("check")
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, "properties file: "+good)
	})
	t.Run("retryProperties", func(t *testing.T) {
		code, _, errOut := runCRL("check", "-dsn", "sqlserver://h?database=x&retryProperties="+bad)
		assert.Equal(t, 1, code, "the DSN's file is read")
		assert.Contains(t, errOut, "2AND2")
	})
	t.Run("working directory", func(t *testing.T) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, config.DefaultPropertiesFile), []byte("retryExec={1205:3,2AND2}\n"), 0o600))
		defer os.Remove(filepath.Join(dir, config.DefaultPropertiesFile))
		code, _, errOut := runCRL("check", "{1222:3,1}")
		assert.Equal(t, 1, code, "the working directory's file is read for SQL Server")
		assert.Contains(t, errOut, config.DefaultPropertiesFile)

		// The driver inferred from the DSN decides, as in the library: a
		// MySQL or PostgreSQL handle reads no file it was not given.
		for _, dsn := range []string{"root@tcp(127.0.0.1:3306)/db", "postgres://u@h/db", "host=h dbname=db"} {
			code, out, errOut := runCRL("check", "-dsn", dsn)
			assert.Equal(t, 0, code, "%s: %s", dsn, errOut)
			assert.Contains(t, out, "properties file: none", dsn)
		}
		code, _, _ = runCRL("check", "-dsn", "server=h;database=db")
		assert.Equal(t, 1, code, "an ADO DSN is SQL Server's: the file is read")
	})
	t.Run("DSN", func(t *testing.T) {
		for _, tc := range []struct {
			dsn, want string
		}{
			{"sqlserver://h?retryExec={1205:3}&connectRetryCount=300", "connectRetryCount"},
			{"server=h;connectRetryCount=300", "connectRetryCount"},
			{"root@tcp(127.0.0.1:3306)/db?connectRetryCount=300", "connectRetryCount"},
			{"host=h dbname=x connectRetryCount=300", "connectRetryCount"},
			{"postgres://u@h/db?queryTimeout=soon", "queryTimeout"},
		} {
			code, _, errOut := runCRL("check", "-dsn", tc.dsn)
			assert.Equal(t, 1, code, "%s", tc.dsn)
			assert.Contains(t, errOut, tc.want, "%s", tc.dsn)
		}
		code, out, errOut := runCRL("check", "-dsn", "root@tcp(127.0.0.1:3306)/db?retryExec={1213:3,1}")
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, "ok: 1 statement rule(s)")
	})
	t.Run("look-alike keys", func(t *testing.T) {
		// Cyrillic е and у, a zero-width space: the key would reach the
		// driver and the rule silently not apply (issue 28, item 2).
		for _, tc := range []struct{ dsn, want string }{
			{"sqlserver://h?database=x&r\u0435tr\u0443Exec={1205:3,1}", "retryExec"},
			{"sqlserver://h?database=x&retry%E2%80%8BExec={1205:3,1}", "retryExec"},
			{"server=h;r\u0435tr\u0443Conn={+4060};database=x", "retryConn"},
			{"server=h;retry\u200bExec={1205:3,1}", "retryExec"},
		} {
			dsn, err := strconv.Unquote(`"` + tc.dsn + `"`)
			require.NoError(t, err)
			code, out, errOut := runCRL("check", "-dsn", dsn)
			assert.Equal(t, 1, code, "%q: %s", dsn, out)
			assert.Contains(t, errOut, tc.want, dsn)
			assert.Contains(t, errOut, "not ASCII", dsn)
		}
	})
}

func TestInferDriver(t *testing.T) {
	for dsn, want := range map[string]string{
		"":                                        "sqlserver",
		"sqlserver://sa:x@h:1433?database=shop":   "sqlserver",
		"odbc:server=h;user id=sa":                "sqlserver",
		"server=h;user id=sa;password=x":          "sqlserver",
		"Data Source=h;Initial Catalog=shop":      "sqlserver",
		"root:pw@tcp(127.0.0.1:3306)/test":        "mysql",
		"root@unix(/tmp/mysql.sock)/test":         "mysql",
		"user@/test?retryExec={1213:3,1}":         "mysql",
		"postgres://postgres@127.0.0.1:5432/test": "pgx",
		"postgresql://h/db":                       "pgx",
		"host=h user=postgres dbname=test":        "pgx",
		"host=h retryExec={40P01:3;40001:2,1}":    "pgx",
		"server=h; user=sa":                       "sqlserver", // space after ';' and a key PostgreSQL knows too
		"Server = h; User ID = sa; Password = x":  "sqlserver",
	} {
		got, err := inferDriver(dsn)
		require.NoError(t, err, "%q", dsn)
		assert.Equal(t, want, got, "%q", dsn)
	}
	_, err := inferDriver("whatever")
	assert.ErrorContains(t, err, "-driver")
}

// Every key that names the server of a go-mssqldb ADO DSN (the one list
// that config's Azure default reads too) tells a SQL Server DSN, in any
// case.
func TestInferDriverKnowsEveryServerKey(t *testing.T) {
	keys := mssqldsn.ServerKeys()
	require.NotEmpty(t, keys)
	for _, k := range keys {
		for _, dsn := range []string{k + "=h", strings.ToUpper(k) + " = h", "user id=sa;" + k + "=h"} {
			got, err := inferDriver(dsn)
			require.NoError(t, err, dsn)
			assert.Equal(t, "sqlserver", got, dsn)
		}
	}
}

func TestExplain(t *testing.T) {
	isolate(t)
	code, out, errOut := runCRL("explain", "-querytimeout", "5", "{1205:5,2*2:select,update}")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(out, "\n")
	row := func(retry string) string {
		for _, l := range lines {
			if f := strings.Fields(l); len(f) > 1 && f[0] == "1205" && f[1] == retry {
				return l
			}
		}
		t.Fatalf("no row for retry %s:\n%s", retry, out)
		return ""
	}
	assert.NotContains(t, row("2"), "refused", "4s ≤ 5s")
	assert.Contains(t, row("3"), "refused: wait > queryTimeout", "8s > 5s")
	assert.Contains(t, row("4"), "never reached", "after a refused wait")
	assert.Contains(t, row("5"), "never reached", "after a refused wait")
	assert.Contains(t, row("1"), "select,update")

	code, out, _ = runCRL("explain", "{1205:0}")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "never retried")

	// 255 waits at the ceiling: the elapsed time saturates, never negative.
	// Such a wait is an error of crl check's, and the table still shows it.
	code, out, errOut = runCRL("explain", "{1:255,2147483647*2}")
	require.Equal(t, 1, code, errOut)
	assert.Contains(t, errOut, "retry 1 waits 596523h14m7s (2147483647 s), longer than 18h12m15s")
	assert.Contains(t, out, "more than 2562047h")
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 3 && f[0] == "1" {
			assert.False(t, strings.HasPrefix(f[3], "-"), "elapsed %q is negative", f[3])
		}
	}
}

func TestNotes(t *testing.T) {
	isolate(t)
	code, out, _ := runCRL("check", "{1205:3,10ms};{1222:2,1.5}")
	require.Equal(t, 0, code)
	assert.Contains(t, out, `note: rule "{1205:3,10ms}"`)
	assert.Contains(t, out, "10ms+0")
	assert.Contains(t, out, `note: rule "{1222:2,1.5}"`)

	code, out, _ = runCRL("check", "{1205:3,10ms+0};{1222:3,2*2};{40613:2,5};{1:1}")
	assert.Equal(t, 0, code)
	assert.NotContains(t, out, "note:", "explicit changes need no note")
}

func TestQueryTimeoutFlagTakesTheJDBCSpelling(t *testing.T) {
	isolate(t)
	lower, outLower, errLower := runCRL("explain", "-querytimeout", "5", "{1205:5,2*2}")
	require.Equal(t, 0, lower, errLower)
	jdbc, outJDBC, errJDBC := runCRL("explain", "-queryTimeout", "5", "{1205:5,2*2}")
	require.Equal(t, 0, jdbc, errJDBC)
	assert.Equal(t, outLower, outJDBC)
	assert.Contains(t, outJDBC, "never reached")
}

// -querytimeout takes exactly what the DSN key queryTimeout takes, read by
// the same parser: seconds, or a time with a unit such as 5s; a value the
// key does not take exits 2 naming it and what is expected.
func TestQueryTimeoutFlagTakesWhatTheDSNKeyTakes(t *testing.T) {
	isolate(t)
	const rules = "{1205:5,2*2}"
	for _, tc := range []struct{ flag, dsn string }{
		{"5", "5"}, {"5s", "5"}, {"5000ms", "5"}, {"1.5", "1.5s"}, {"500ms", "0.5"}, {"0", "0"}, {"-1", "-1"},
	} {
		code, viaFlag, errOut := runCRL("explain", "-querytimeout", tc.flag, rules)
		require.Equal(t, 0, code, "-querytimeout %s: %s", tc.flag, errOut)
		code, viaDSN, errOut := runCRL("explain", "-dsn", "sqlserver://h?queryTimeout="+tc.dsn, rules)
		require.Equal(t, 0, code, "queryTimeout=%s: %s", tc.dsn, errOut)
		assert.Equal(t, viaDSN, viaFlag, "-querytimeout %s and queryTimeout=%s", tc.flag, tc.dsn)
	}
	code, out, _ := runCRL("explain", "-querytimeout", "5s", rules)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "1205   3      8s    14s      (every statement)  refused: wait > queryTimeout")

	for _, bad := range []string{"5x", "-5", "soon", "0s", ""} {
		code, _, errOut := runCRL("explain", "-querytimeout", bad, rules)
		assert.Equal(t, 2, code, "-querytimeout %q exits 2", bad)
		assert.Contains(t, errOut, `invalid value "`+bad+`" for flag -querytimeout`, "names the value")
		assert.Contains(t, errOut, "expected -1 (none), 0, or seconds such as 30 or 1.5s", "-querytimeout %q says what is expected", bad)
		_, _, dsnErr := config.ParseDSN("sqlserver", "sqlserver://h?queryTimeout="+bad)
		if bad != "" {
			assert.ErrorContains(t, dsnErr, "expected -1 (none), 0, or seconds such as 30 or 1.5s", "the DSN key refuses %q too", bad)
		}
	}
}

func TestCheckNotesARuleLongerThanTheBudget(t *testing.T) {
	isolate(t)
	code, out, errOut := runCRL("check", "{40613,40197:30,1}")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "lets one statement retry a sqlserver error 40197 at most 10 times")
	assert.Contains(t, out, "retryBudget=max=60")

	// A deadlock victim is contention: 128 failures on a fresh handle, and
	// a larger max lets the contention pool grow only once max/2 exceeds
	// it.
	code, out, errOut = runCRL("check", "{1205:30,1}")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "retry budget", "30 retries of a deadlock victim fit the default budget")
	code, out, errOut = runCRL("check", "{1205:255,1}")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "a sqlserver error 1205 at most 128 times")
	assert.Contains(t, out, "retryBudget=max=51", "max/2 = 25.5 tokens pay for 255 failures at 0.1")
	code, out, errOut = runCRL("check", "-driver", "mysql", "{1205:30,1}")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "a mysql error 1205 at most 5 times", "MySQL's 1205 is a lock-wait time-out: overload")
	assert.Contains(t, out, "retryBudget=max=120")

	code, out, errOut = runCRL("check", "-dsn", "sqlserver://h?retryBudget=max=60", "{40613,40197:30,1}")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "retry budget")

	code, out, errOut = runCRL("check", "-dsn", "sqlserver://h?retryBudget=off", "{40613,40197:30,1}")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "retry budget")

	code, out, errOut = runCRL("check", "{1205:10,1}")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "retry budget")
}

// chdir changes the working directory for the rest of the test, as
// testing.T.Chdir does from Go 1.24 (the module builds with Go 1.22).
func chdir(t *testing.T, dir string) {
	t.Helper()
	old, err := os.Getwd()
	require.NoError(t, err)
	require.NoError(t, os.Chdir(dir))
	t.Cleanup(func() { _ = os.Chdir(old) })
}

// The messages of rules that do not parse, as check prints them: an empty
// error token says what it is, and a filter word cut off by ';' says how
// ';' and ',' differ.
func TestCheckParseMessages(t *testing.T) {
	isolate(t)
	for _, tc := range []struct{ rules, want string }{
		{"{:3}", `config: retryExec="{:3}": core: rule "{:3}": "" is an empty error token, expected an error number, a five-character SQLSTATE, or a class: deadlock, serialization, lockTimeout, failover, throttle, badconn, timeout`},
		{"{1213:3,2*2:select;update}", `config: retryExec="{1213:3,2*2:select;update}": core: rule "update}": a statement rule needs timings, expected {errors:count[,initial[op change]][:filter]} such as {1205:3,2*2}; ` +
			`"update" follows a rule with a filter: ';' separates rules and ',' separates filter words, so write {1213:3,2*2:select,update}`},
	} {
		code, out, errOut := runCRL("check", tc.rules)
		assert.Equal(t, 1, code, tc.rules)
		assert.Equal(t, tc.want+"\n", errOut, tc.rules)
		assert.Empty(t, out, tc.rules)
	}
}

// For a MySQL or PostgreSQL server, check and explain print that family's
// connection rules: the builtin list holds SQL Server's login errors, so
// only what retryConn names is retried there.
func TestConnectionRulesOfTheFamily(t *testing.T) {
	isolate(t)
	const defaults = "; connectRetryCount 1, connectRetryInterval 10s, loginTimeout 30s\n"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-dsn", "sqlserver://h?database=x"}, "connection: the builtin list" + defaults},
		{[]string{"-dsn", "root@tcp(127.0.0.1:3306)/db"},
			"connection: none named (the builtin list holds SQL Server's login errors, no mysql error; name them in retryConn, such as {+1040})" + defaults},
		{[]string{"-dsn", "postgres://u@h/db"},
			"connection: none named (the builtin list holds SQL Server's login errors, no postgres error; name them in retryConn, such as {+53300})" + defaults},
		{[]string{"-dsn", "host=h dbname=db", "-conn", "{+53300,57P03}"},
			"connection: {+53300,57P03} (the builtin list holds SQL Server's login errors: these alone for postgres)" + defaults},
		{[]string{"-driver", "mysql", "-conn", "{4060}"},
			"connection: {4060} (the builtin list holds SQL Server's login errors: these alone for mysql)" + defaults},
	} {
		for _, cmd := range []string{"check", "explain"} {
			args := append([]string{cmd}, tc.args...)
			code, out, errOut := runCRL(args...)
			require.Equal(t, 0, code, "%q: %s", args, errOut)
			assert.Contains(t, out, tc.want, "%q", args)
			if tc.args[1] != "sqlserver://h?database=x" {
				assert.NotContains(t, out, "the builtin list;", "%q", args)
			}
		}
	}
}
