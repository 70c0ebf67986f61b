// Package familyprobe gives the tests of the packages that read the table
// of database families (internal/tables/family) the driver names to try
// them with.
package familyprobe

import (
	"strings"

	"github.com/crl-go/crl/internal/tables/family"
)

// Names returns driver names with their family: every name of the table,
// spelt as users spell them (lower, upper and mixed case), and names the
// table does not have (Other).
func Names() map[string]family.Family {
	out := map[string]family.Family{}
	for _, n := range family.Names() {
		f := family.Of(n)
		out[n] = f
		out[strings.ToUpper(n)] = f
		out[strings.ToUpper(n[:1])+n[1:]] = f
	}
	for _, n := range []string{"", "sqlite3", "sqlite", "oracle", "pgx/v4", "postgres-otel", "sqlserver-otel", "mysql8", "clickhouse"} {
		out[n] = family.Other
	}
	return out
}
