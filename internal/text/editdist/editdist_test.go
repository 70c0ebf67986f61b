package editdist

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b  string
		limit int
		want  int
	}{
		{"select", "select", 3, 0},
		{"selct", "select", 3, 1},   // a deletion
		{"selectt", "select", 3, 1}, // an insertion
		{"selezt", "select", 3, 1},  // a substitution
		{"slelct", "select", 3, 2},
		{"updtae", "update", 3, 1}, // a swap of two neighbours
		{"retryExecc", "retryexec", 3, 2},
		{"", "abc", 5, 3},
		{"abc", "", 5, 3},
		{"abcdef", "a", 3, 3}, // at the limit: stops
		{"xyzxyz", "abcabc", 2, 2},
		{"rеtry", "retry", 3, 1}, // Cyrillic е: characters, not bytes
	} {
		assert.Equal(t, tc.want, Distance([]rune(tc.a), []rune(tc.b), tc.limit), "%q %q", tc.a, tc.b)
		assert.Equal(t, tc.want, Distance([]rune(tc.b), []rune(tc.a), tc.limit), "%q %q", tc.b, tc.a)
	}
}
