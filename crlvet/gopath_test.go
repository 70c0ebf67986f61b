package crlvet

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/tools/go/analysis/analysistest"
)

// gopath is a GOPATH-style tree of stubs (crl's root package, sqlxcrl,
// gormcrl, core, sqlx, GORM, ent, an ent generated client, bun: each with
// the package path and the signatures the analyzer knows them by) and of
// the packages that use them.
func gopath(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "gopath"))
	require.NoError(t, err)
	return dir
}

func TestTransactionsWithoutRetry(t *testing.T) {
	analysistest.Run(t, gopath(t), New(Settings{}),
		"example.com/sqltx", "example.com/directives", "example.com/sqlxtx", "example.com/gormtx", "example.com/enttx", "example.com/buntx")
}

// Library code that imports no crl package is checked with -all only.
func TestTransactionsOfLibrariesNeedAll(t *testing.T) {
	c := &collecting{}
	results := analysistest.Run(c, gopath(t), New(Settings{}), "example.com/sqllib")
	require.Len(t, results, 1)
	assert.Empty(t, results[0].Diagnostics)
	assert.False(t, results[0].Result.(*Result).HandlesChecked)
	results = analysistest.Run(t, gopath(t), New(Settings{All: true}), "example.com/sqllib")
	assert.True(t, results[0].Result.(*Result).HandlesChecked)
}

func TestClosuresNotSafeToRunAgain(t *testing.T) {
	analysistest.Run(t, gopath(t), New(Settings{}), "example.com/closures")
}
