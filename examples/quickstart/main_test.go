package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQuickstartRuns(t *testing.T) {
	require.NoError(t, run())
}

// The package doc names the rule the program runs with.
func TestDocNamesTheRule(t *testing.T) {
	src, err := os.ReadFile("main.go")
	require.NoError(t, err)
	doc, _, ok := strings.Cut(string(src), "package main")
	require.True(t, ok, "main.go has a package clause")
	assert.Contains(t, strings.ReplaceAll(doc, "\n// ", " "), rule)
}
