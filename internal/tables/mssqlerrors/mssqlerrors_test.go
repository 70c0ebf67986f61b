package mssqlerrors

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLookup(t *testing.T) {
	s := Session{SPID: 57, User: "app", Database: "shop", Server: "db1"}
	for n := range table {
		e, ok := Lookup(n, s)
		assert.True(t, ok, "%d", n)
		assert.True(t, e.Class >= 1 && e.Class <= 25, "%d: class %d", n, e.Class)
		assert.NotZero(t, e.State, "%d", n)
		assert.NotEmpty(t, e.Message, "%d", n)
		assert.NotContains(t, e.Message, "%!", "%d: a placeholder left unfilled", n)
	}
	for n, want := range map[int32]string{1205: "Process ID 57", 3960: "database 'shop'", 4060: `"shop"`, 18456: "'app'", 40613: "server 'db1'"} {
		e, _ := Lookup(n, s)
		assert.True(t, strings.Contains(e.Message, want), "%d: %q", n, e.Message)
	}
	_, ok := Lookup(50000, s)
	assert.False(t, ok)
}
