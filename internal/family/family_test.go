package family

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOf(t *testing.T) {
	for name, want := range Probes() {
		assert.Equal(t, want, Of(name), "%q", name)
	}
	assert.Equal(t, Postgres, Of("PostgreSQL"))
	assert.Equal(t, Postgres, Of("POSTGRES"))
	for _, f := range []Family{SQLServer, MySQL, Postgres} {
		got, ok := Parse(f.String())
		assert.True(t, ok)
		assert.Equal(t, f, got)
		assert.Equal(t, f, Of(f.Driver()))
	}
	_, ok := Parse("sqlite")
	assert.False(t, ok)
	assert.Len(t, Names(), 8)
}
