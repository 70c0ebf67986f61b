package keywords

import (
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTableIsSorted(t *testing.T) {
	all := All()
	require.True(t, sort.StringsAreSorted(all), "Is searches the table")
	for i, k := range all {
		assert.Equal(t, strings.ToLower(k), k)
		if i > 0 {
			assert.NotEqual(t, all[i-1], k, "a keyword twice")
		}
	}
}

func TestIs(t *testing.T) {
	for _, k := range []string{"select", "SELECT", "Update", "with", "exec", "execute", "call", "merge", "values", "upsert", "explain", "show", "begin", "commit", "rollback", "end", "abort", "vacuum", "copy", "replace", "do"} {
		assert.True(t, Is(k), k)
	}
	for _, w := range []string{"", "selct", "dbo", "transfer", "sel ect", "selects", "timeout", "badconn"} {
		assert.False(t, Is(w), w)
	}
}

func TestNear(t *testing.T) {
	for w, want := range map[string]string{
		"selct":   "select",
		"slect":   "select",
		"seelct":  "select",
		"updtae":  "update",
		"updat":   "update",
		"delte":   "delete",
		"insret":  "insert",
		"mrege":   "merge",
		"trucate": "truncate",
	} {
		got, ok := Near(w)
		assert.True(t, ok, w)
		assert.Equal(t, want, got, w)
	}
	// Names of their own: a keyword with letters added at its end, a word
	// near only a short keyword, a keyword itself, a schema's name.
	for _, w := range []string{"updates", "updated", "selects", "shop", "exce", "select", "dbo", "sales", "transfer", ""} {
		_, ok := Near(w)
		assert.False(t, ok, w)
	}
}
