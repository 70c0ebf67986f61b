package config

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
)

func TestParseProperties(t *testing.T) {
	src := "\uFEFF# mssql-jdbc.properties\r\n" +
		"! a comment too\n" +
		"\n" +
		"retryExec={1205:3,1}\n" +
		"  RetryExec = {1222:2,1}; {40613:1,5}\n" +
		"retryConn : {+4060}\n" +
		"connectRetryCount 3\n" +
		"retryExec=\\\n" +
		"     {49918:1,1}\n" +
		"loginTimeout=45\n" +
		"queryTimeout=0\n" +
		"connectRetryInterval=5s\n" +
		"retryRefresh=10\n" +
		"retryBudget=max=20,timeoutCost=3\n" +
		"retryJitter=full\n" +
		"retryConn={+4221}\n" +
		"retryExec=\n"
	c, err := ParseProperties("test.properties", []byte(src))
	require.NoError(t, err)
	want := Config{
		RetryExec:            "{1205:3,1};{1222:2,1}; {40613:1,5};{49918:1,1}",
		RetryConn:            "{+4060};{+4221}",
		ConnectRetryCount:    3,
		ConnectRetryInterval: 5 * time.Second,
		LoginTimeout:         45 * time.Second,
		QueryTimeout:         core.JDBCQueryTimeoutZero,
		RetryRefresh:         10 * time.Second,
		Budget:               core.BudgetSettings{Max: 20, OverloadCost: 3},
		Jitter:               core.JitterFull,
	}
	got := c
	got.set, got.exec, got.conn = 0, nil, nil
	require.Equal(t, want, got)
	p, err := c.Policy()
	require.NoError(t, err)
	for _, n := range []int32{1205, 1222, 40613, 49918} {
		_, ok := p.Statement.Lookup(n)
		assert.True(t, ok, "a rule for %d", n)
	}
	// The retryConn lines add up to the builtin list plus 4060 and 4221.
	for _, n := range []int32{4060, 4221, 40613} {
		assert.True(t, p.Connection.Retryable(n), "retryConn retries %d", n)
	}
}

func TestParsePropertiesErrors(t *testing.T) {
	tests := []struct {
		src  string
		line int
		want []string
		is   error
	}{
		{"retryExec={1205:3,1}\n# fine\nretryExce={1222:2,1}\n", 3, []string{`"retryExce"`, "retryExec", "f.properties:3"}, ErrUnknownKey},
		{"# c\nretryExec={1205:3,1}\nretryExec={1222:two}\n", 3, []string{`"two"`, "f.properties:3"}, core.ErrInvalidParameterNumber},
		{"retryConn={4060:1}\n", 1, []string{"retryConn"}, core.ErrInvalidRuleFormat},
		{"connectRetryCount=300\n", 1, []string{`connectRetryCount="300"`, "255"}, ErrInvalidValue},
		{"loginTimeout=abc\n", 1, []string{`loginTimeout="abc"`}, ErrInvalidValue},
		{"connectRetryCount=1\n\nconnectRetryCount=2\n", 3, []string{"first on line 1"}, ErrDuplicateKey},
		{"retryProperties=/x\n", 1, []string{"retryProperties"}, ErrUnknownKey},
		{"retryExec={1205:3,1}\nretryExec=\\\n  {1205:x}\n", 2, []string{`"x"`}, core.ErrInvalidParameterNumber},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			_, err := ParseProperties("f.properties", []byte(tt.src))
			var fe *FileError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tt.line, fe.Line, "line (%v)", err)
			assert.ErrorIs(t, err, tt.is)
			assert.True(t, strings.HasPrefix(err.Error(), "config: "), "error %q starts with config: ", err)
			for _, w := range tt.want {
				assert.ErrorContains(t, err, w)
			}
		})
	}
}

func TestSplitPropertyEscapes(t *testing.T) {
	for _, tt := range []struct{ line, key, value string }{
		{"a=b", "a", "b"},
		{"a = b", "a", "b"},
		{"a:b", "a", "b"},
		{"a b", "a", "b"},
		{`a\=b=c`, `a\=b`, "c"},
		{"a", "a", ""},
		{"a=", "a", ""},
		{`a\`, `a\`, ""},
	} {
		k, v := splitProperty(tt.line)
		assert.Equal(t, tt.key, k, "splitProperty(%q): key", tt.line)
		assert.Equal(t, tt.value, v, "splitProperty(%q): value", tt.line)
	}
	assert.Equal(t, "A\t\\x", unescapeProperty(`\u0041\t\\x`), "unescape")
}
