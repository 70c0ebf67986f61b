package quote

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAbbreviate(t *testing.T) {
	assert.Equal(t, "abc", Abbreviate("abc", 3))
	assert.Equal(t, "ab…", Abbreviate("abcd", 2))
	assert.Equal(t, "a…", Abbreviate("aéb", 2), "never half a character")
	assert.Equal(t, "…", Abbreviate("éé", 1))
}
