package config

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
)

// docsKeyTable returns the rows of the key table of docs/configuration.md:
// key → its "range / values" cell, and key → its "hot reload" cell.
func docsKeyTable(t *testing.T) (map[string]string, map[string]string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "docs", "configuration.md"))
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(data), "\n| key | default | range / values | hot reload | meaning |\n|---|---|---|---|---|\n")
	require.True(t, ok, "docs/configuration.md has no key table")
	rows, reloads := map[string]string{}, map[string]string{}
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| `") {
			break // the end of the table
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		require.Len(t, cells, 5, "row %q: expected key | default | range / values | hot reload | meaning", line)
		key := strings.SplitN(cells[0], "`", 3)[1]
		rows[key] = strings.TrimSpace(cells[2])
		reloads[key] = strings.TrimSpace(cells[3])
	}
	return rows, reloads
}

// The docs list every key of the table, with the values the table gives
// it, and no other: a setting cannot be added, renamed or have its range
// changed without docs/configuration.md following.
func TestDocsListEveryKey(t *testing.T) {
	rows, reloads := docsKeyTable(t)
	for _, s := range settings {
		if s.code {
			assert.NotContains(t, rows, s.key, "%s is set only in code, yet the key table lists it", s.key)
			continue
		}
		if assert.Contains(t, rows, s.key, "docs/configuration.md's key table does not list %s", s.key) {
			assert.Equal(t, s.values, rows[s.key], "the range / values of %s in docs/configuration.md", s.key)
			reload := "yes"
			switch {
			case !s.inFile:
				reload = "— (not in the file)"
			case s.startOnly:
				reload = "no: restart to apply"
			}
			assert.Equal(t, reload, reloads[s.key], "whether %s reloads, in docs/configuration.md", s.key)
		}
	}
	assert.ElementsMatch(t, Keys(), keysOf(rows), "the keys of docs/configuration.md's key table")
}

func keysOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The docs list every exported option of the package.
func TestDocsListEveryOption(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "docs", "configuration.md"))
	require.NoError(t, err)
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	n := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !fn.Name.IsExported() || !strings.HasPrefix(fn.Name.Name, "With") {
				continue
			}
			n++
			assert.Contains(t, string(data), "`"+fn.Name.Name+"(", "docs/configuration.md does not list %s", fn.Name.Name)
		}
	}
	require.Positive(t, n, "no With option found")
}

// Every option marks its setting as set even with the zero value, so that
// the zero value in code takes precedence over the DSN and the file; and
// every setting of the table has an option.
func TestEveryOptionSetsItsSetting(t *testing.T) {
	full := Config{
		RetryExec: "{1205:3}", RetryConn: "{+4060}", ConnectRetryCount: 3,
		ConnectRetryInterval: 2 * time.Second, LoginTimeout: 5 * time.Second, QueryTimeout: 7 * time.Second,
		PropertiesPath: "x.properties", RetryRefresh: time.Second, NoBudget: true, Jitter: core.JitterFull,
		Breaker: core.BreakerSettings{Failures: 2}, ExecutionCutoff: time.Second,
		NoTxReplay: true, TxReplayLimit: 10,
		Clock: struct{ core.Clock }{}, Observer: struct{ core.Observer }{},
	}
	options := map[string]Option{
		keyRetryExec:            WithRetryExec(""),
		keyRetryConn:            WithRetryConn(""),
		keyConnectRetryCount:    WithConnectRetryCount(0),
		keyConnectRetryInterval: WithConnectRetryInterval(0),
		keyLoginTimeout:         WithLoginTimeout(0),
		keyQueryTimeout:         WithQueryTimeout(0),
		keyRetryProperties:      WithPropertiesFile(""),
		keyRetryRefresh:         WithRetryRefresh(0),
		keyRetryBudget:          WithRetryBudget(core.BudgetSettings{}),
		keyRetryJitter:          WithJitter(core.JitterNone),
		keyRetryBreaker:         WithCircuitBreaker(core.BreakerSettings{}),
		keyExecutionCutoff:      WithExecutionCutoff(0),
		keyTxReplay:             WithTxReplay(true),
		keyTxReplayLimit:        WithTxReplayLimit(0),
		nameClock:               WithClock(nil),
		nameObserver:            WithObserver(nil),
	}
	require.Len(t, options, len(settings), "a setting of the table has no option in this test")
	for i, s := range settings {
		opt, ok := options[s.key]
		require.True(t, ok, "no option for %s", s.key)
		require.True(t, s.isSet(&full), "full does not set %s", s.key)
		c := NewConfig(opt)
		assert.True(t, c.has(i), "With… for %s does not mark it set", s.key)
		merged := c.over(full)
		if s.key != keyConnectRetryCount { // WithConnectRetryCount(0) is core.Disabled, which is not zero
			assert.False(t, s.isSet(&merged), "%s: the zero value given in code is overridden by a lower source", s.key)
		}
	}
}
