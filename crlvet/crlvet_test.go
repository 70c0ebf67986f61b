package crlvet

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/analysistest"
)

// testdata is a module (example.com/vetme) that requires crl through a
// replace, so the packages are checked against the real sqlxcrl, gormcrl
// and gorm.io/gorm.
func testdata(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("testdata")
	require.NoError(t, err)
	return dir
}

func TestAnalyzerFindsLostRetries(t *testing.T) {
	analysistest.Run(t, testdata(t), Analyzer, "./sqlxuse", "./gormuse", "./clean")
}

// The review's false positives and negatives, against the real packages.
func TestAnalyzerReviewCases(t *testing.T) {
	analysistest.Run(t, testdata(t), Analyzer, "./review")
}

// Shapes met in real adoptions: a transaction begun in a helper method a
// unit calls, and GORM calls inside crl.Retry's function without its
// context.
func TestAnalyzerAdoptionCases(t *testing.T) {
	analysistest.Run(t, testdata(t), Analyzer, "./adoption")
}

func TestAnalyzerGormAll(t *testing.T) {
	a := newFlagged(t)
	analysistest.Run(t, testdata(t), a, "./gormplain", "./gormuse", "./clean")
	analysistest.Run(t, testdata(t), New(Settings{GormAll: true}), "./gormplain")
}

// collecting is an analysistest.Testing that keeps what it is told.
type collecting struct{ errors []string }

func (c *collecting) Errorf(format string, args ...any) {
	c.errors = append(c.errors, fmt.Sprintf(format, args...))
}

// Without -gormall a package that does not import gormcrl is not checked
// for GORM: its only "error" is the want comment that -gormall matches.
func TestAnalyzerGormNeedsTheImport(t *testing.T) {
	c := &collecting{}
	results := analysistest.Run(c, testdata(t), New(Settings{}), "./gormplain")
	require.Len(t, results, 1)
	assert.Empty(t, results[0].Diagnostics)
	require.Len(t, c.errors, 1, "%q", c.errors)
	assert.Contains(t, c.errors[0], "no diagnostic was reported matching")
}

func TestAnalyzerIsValid(t *testing.T) {
	assert.Equal(t, "crlvet", Analyzer.Name)
	assert.NotEmpty(t, Analyzer.Doc)
	assert.NotNil(t, Analyzer.Flags.Lookup("gormall"))
}

// newFlagged returns an analyzer whose -gormall flag is set.
func newFlagged(t *testing.T) *analysis.Analyzer {
	a := New(Settings{})
	require.NoError(t, a.Flags.Set("gormall", "true"))
	return a
}
