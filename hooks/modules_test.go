package hooks_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/internal/testsupport/usermodule"
)

// userProgram is the program of a user who imports only sqlxcrl and the
// SQL Server driver.
const userProgram = `package main

import (
	"fmt"

	_ "github.com/microsoft/go-mssqldb"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/hooks"
	"github.com/crl-go/crl/sqlxcrl"
)

func main() {
	db, err := sqlxcrl.Open("sqlserver", "sqlserver://localhost", config.WithObserver(hooks.Slog(nil)))
	fmt.Println(db != nil, err)
}
`

// TestUserModuleGraphHasNoMetricsLibrary builds the module graph of a
// program that imports only sqlxcrl (and the hooks package) and go-mssqldb,
// against this checkout (replace), and checks that no Prometheus or
// OpenTelemetry module is in it, and that its go directive is the crl
// module's. docs/modules.md shows the graph.
func TestUserModuleGraphHasNoMetricsLibrary(t *testing.T) {
	m := usermodule.New(t, "..")
	m.Write("main.go", userProgram)
	m.Write("go.mod", "module example.com/orders\n\ngo 1.22\n"+m.RequireCrl())
	m.SeedSum("")
	m.Go("mod", "tidy")
	modules := m.Go("list", "-m", "all")
	for _, bad := range []string{"prometheus", "opentelemetry", "client_golang"} {
		assert.NotContains(t, modules, bad, "go list -m all of a sqlxcrl program:\n%s", modules)
	}
	deps := m.Go("list", "-deps", ".")
	assert.NotContains(t, deps, "prometheus")
	assert.NotContains(t, deps, "go.opentelemetry.io")
	assert.Contains(t, m.Read("go.mod", false), "\ngo "+usermodule.GoDirective(m.Read("go.mod", true))+"\n",
		"the user's go directive is not raised above the crl module's")
	if testing.Verbose() {
		t.Logf("go list -m all:\n%s", modules)
	}
}

// The hook modules are modules of their own: they use crl's exported API
// only (config.SystemName, core.FirstKeyword, …), never a package under
// crl's internal/, whose names are nobody's contract. Test files included.
func TestHookModulesImportNoInternalPackage(t *testing.T) {
	for _, module := range []string{"otel", "prometheus"} {
		files, err := filepath.Glob(filepath.Join(module, "*.go"))
		require.NoError(t, err)
		require.NotEmpty(t, files, "hooks/%s", module)
		for _, name := range files {
			f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
			require.NoError(t, err)
			for _, im := range f.Imports {
				path, err := strconv.Unquote(im.Path.Value)
				require.NoError(t, err)
				assert.False(t, strings.HasPrefix(path, "github.com/crl-go/crl/internal/"), "%s imports %s", name, path)
			}
		}
	}
}
