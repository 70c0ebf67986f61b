package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
)

// TestPolicyUsesTheCompiledRules: the DSN, the properties file, the
// options and ParseOption compile a rule list once, when they read it,
// and keep its text as written; Policy returns those rules and does not
// parse the text again (other rules swapped in under the same text are
// the ones it returns).
func TestPolicyUsesTheCompiledRules(t *testing.T) {
	const exec, conn = " {1205:3,1} ", "{+4060}"
	fromDSN, _, err := ParseDSN("sqlserver", "server=h;retryExec="+exec+";retryConn="+conn)
	require.NoError(t, err)
	fromFile, err := ParseProperties("p", []byte("retryExec="+exec+"\nretryConn="+conn+"\n"))
	require.NoError(t, err)
	execOpt, err := ParseOption("retryExec", exec)
	require.NoError(t, err)
	connOpt, err := ParseOption("retryConn", conn)
	require.NoError(t, err)
	for name, c := range map[string]Config{
		"DSN": fromDSN, "file": fromFile, "ParseOption": NewConfig(execOpt, connOpt),
		"With": NewConfig(WithRetryExec(exec), WithRetryConn(conn)),
		"over": NewConfig(WithConfig(fromDSN)).over(fromFile),
	} {
		require.NotNil(t, c.exec, name)
		require.NotNil(t, c.conn, name)
		assert.Equal(t, c.RetryExec, c.exec.text, "%s: the text kept is the text compiled", name)
		assert.Contains(t, exec, c.RetryExec, "%s: the text as written", name)

		other, err := core.ParseStatementRules("{1222:2,1}")
		require.NoError(t, err)
		c.exec = &compiled[core.StatementRules]{text: c.RetryExec, rules: other}
		p, err := c.Policy()
		require.NoError(t, err, name)
		_, ok := p.Statement.Lookup(1222)
		assert.True(t, ok, "%s: Policy returns the compiled rules", name)
		_, ok = p.Statement.Lookup(1205)
		assert.False(t, ok, "%s: Policy parsed the text again", name)
		assert.True(t, p.Connection.Retryable(4060), name)
	}
}

// TestPolicyCompilesALiteral: rules set in a Config literal, or changed
// after they were compiled, are compiled by Policy, and a bad one is a
// ValueError naming it.
func TestPolicyCompilesALiteral(t *testing.T) {
	p, err := Config{RetryExec: "{1205:3,1}"}.Policy()
	require.NoError(t, err)
	_, ok := p.Statement.Lookup(1205)
	assert.True(t, ok, "a literal's rules")

	c := NewConfig(WithRetryExec("{1205:3,1}"))
	c.RetryExec = "{1222:2,1}"
	p, err = c.Policy()
	require.NoError(t, err)
	_, ok = p.Statement.Lookup(1222)
	assert.True(t, ok, "the text set after the option's, not the option's rules")

	for _, c := range []Config{{RetryConn: "{4060:3}"}, NewConfig(WithRetryConn("{4060:3}"))} {
		_, err = c.Policy()
		var ve *ValueError
		require.ErrorAs(t, err, &ve)
		assert.Equal(t, keyRetryConn, ve.Key)
		assert.Equal(t, "{4060:3}", ve.Value)
		assert.ErrorIs(t, err, core.ErrInvalidRuleFormat)
	}
}

// No source sets retryExec: the handle runs DefaultRetryExec with full
// jitter (unless retryJitter is set); retryExec set to nothing, in code,
// the DSN or the file, means no rules, as in the JDBC driver.
func TestDefaultRetryExec(t *testing.T) {
	_, err := core.ParseStatementRules(DefaultRetryExec)
	require.NoError(t, err, "DefaultRetryExec parses")
	t.Setenv(EnvProperties, "")
	chdir(t, t.TempDir())
	for _, tc := range []struct {
		name        string
		dsn         string
		opts        []Option
		rules       string
		jitter      core.Jitter
		usesDefault bool
	}{
		{"nothing", "server=h", nil, "{deadlock:3,100ms*2};{serialization:3,100ms*2}", core.JitterFull, true},
		{"retryJitter set", "server=h;retryJitter=equal", nil, "{deadlock:3,100ms*2};{serialization:3,100ms*2}", core.JitterEqual, true},
		{"WithJitter none", "server=h", []Option{WithJitter(core.JitterNone)}, "{deadlock:3,100ms*2};{serialization:3,100ms*2}", core.JitterNone, true},
		{"ADO retryExec=", "server=h;retryExec=", nil, "", core.JitterNone, false},
		{"URL retryExec=", "sqlserver://h?retryExec=", nil, "", core.JitterNone, false},
		{"URL retryExec={}", "sqlserver://h?retryExec={}", nil, "", core.JitterNone, false},
		{"WithRetryExec empty", "server=h", []Option{WithRetryExec("")}, "", core.JitterNone, false},
		{"a rule of the DSN", "server=h;retryExec={1205:2,1}", nil, "{1205:2,1s+2s}", core.JitterNone, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, _, err := NewRuntime("sqlserver", tc.dsn, tc.opts...)
			require.NoError(t, err)
			p := rt.Retrier().Policy()
			assert.Equal(t, tc.rules, p.Statement.String())
			assert.Equal(t, tc.jitter, p.Jitter)
			assert.Equal(t, tc.usesDefault, rt.Config().UsesDefaultRule())
		})
	}
	for driver, dsn := range map[string]string{"mysql": "u@tcp(h)/db?retryExec=", "pgx": "postgres://u@h/db?retryExec="} {
		rt, _, err := NewRuntime(driver, dsn)
		require.NoError(t, err, dsn)
		assert.Zero(t, rt.Retrier().Policy().Statement.Len(), dsn)
	}
	file := newPropertiesFile(t, "retryExec=\n")
	rt, _, err := NewRuntime("sqlserver", "server=h", WithPropertiesFile(file.path))
	require.NoError(t, err)
	assert.Zero(t, rt.Retrier().Policy().Statement.Len(), "a properties line retryExec= means no rules")
}
