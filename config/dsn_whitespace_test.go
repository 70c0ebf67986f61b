package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestADOWhiteSpaceAroundBracedValue pins the divergence table's row on
// white space in an ADO DSN (docs/semantics.md): tabs and line ends around
// a braced value are skipped (JDBC allows only spaces); U+00A0 before a
// value is trimmed and the value read as unbraced, so a ';' inside it is
// an error; U+00A0 after the closing brace is ErrMalformed. No white space
// changes what a value means.
func TestADOWhiteSpaceAroundBracedValue(t *testing.T) {
	for _, dsn := range []string{
		"server=h;retryExec={1205:3}\t;database=x",
		"server=h;retryExec={1205:3}\r\n;database=x",
		"server=h;retryExec={1205:3} ;database=x",
		"server=h;retryExec=\t{1205:3};database=x",
		"server=h;retryExec={1205:3}\n",
	} {
		c, out, err := ParseDSN("sqlserver", dsn)
		require.NoError(t, err, "%q", dsn)
		assert.Equal(t, "1205:3", c.RetryExec, "%q", dsn)
		assert.NotContains(t, out, "retryExec", "%q", dsn)
	}

	// U+00A0 before a value: trimmed; the braces then belong to the rule
	// list, which means the same rules.
	c, _, err := ParseDSN("sqlserver", "server=h;retryExec=\u00a0{1205:3};database=x")
	require.NoError(t, err)
	rules, err := c.Policy()
	require.NoError(t, err)
	rule, ok := rules.Statement.Lookup(1205)
	require.True(t, ok, "the rule for 1205")
	assert.Equal(t, 3, rule.Count())
	// ... but a ';' inside it is not hidden by braces any more: loud.
	_, _, err = ParseDSN("sqlserver", "server=h;retryExec=\u00a0{1205:3;1222:2,1};database=x")
	assert.ErrorIs(t, err, ErrMalformed)

	// U+00A0 after the closing brace is not skipped.
	for _, dsn := range []string{"server=h;retryExec={1205:3}\u00a0;database=x", "server=h;retryExec={1205:3}\u00a0"} {
		_, _, err := ParseDSN("sqlserver", dsn)
		assert.ErrorIs(t, err, ErrMalformed, "%q", dsn)
	}
}
