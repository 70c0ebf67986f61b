package family

import (
	"strings"
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
	_, ok = Parse("other")
	assert.False(t, ok)
	assert.Len(t, Names(), 9)
}

// Of and Parse know every common spelling of each family, in any case
// (issue 28, item 4: WithDriverFamily("mariadb") and Of disagreed).
func TestEverySpelling(t *testing.T) {
	for name, want := range map[string]Family{
		"mariadb": MySQL, "mysql": MySQL,
		"postgres": Postgres, "postgresql": Postgres, "pgx": Postgres, "pgx/v5": Postgres,
		"sqlserver": SQLServer, "mssql": SQLServer, "azuresql": SQLServer,
	} {
		for _, spelt := range []string{name, strings.ToUpper(name), strings.ToUpper(name[:1]) + name[1:]} {
			assert.Equal(t, want, Of(spelt), "Of(%q)", spelt)
			got, ok := Parse(spelt)
			assert.True(t, ok, "Parse(%q)", spelt)
			assert.Equal(t, want, got, "Parse(%q)", spelt)
		}
	}
}
