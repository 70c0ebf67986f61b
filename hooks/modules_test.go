package hooks_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	if testing.Short() {
		t.Skip("runs the go command")
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		t.Skipf("no go command: %v", err)
	}
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	rootMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(userProgram), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/orders\n\ngo 1.22\n\n"+
		"require github.com/crl-go/crl v0.0.0\n\nreplace github.com/crl-go/crl => "+root+"\n"), 0o644))
	// The crl module's go.sum holds the hashes of every module the
	// program can need, so go mod tidy verifies them without asking the
	// checksum database (CI's machine may have no network).
	rootSum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), rootSum, 0o644))
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(gobin, args...)
		cmd.Dir = dir
		// Modules the cache lacks come from the module proxy, verified
		// against the seeded go.sum; no workspace file of the caller's.
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}
	run("mod", "tidy")
	modules := run("list", "-m", "all")
	for _, bad := range []string{"prometheus", "opentelemetry", "client_golang"} {
		assert.NotContains(t, modules, bad, "go list -m all of a sqlxcrl program:\n%s", modules)
	}
	deps := run("list", "-deps", ".")
	assert.NotContains(t, deps, "prometheus")
	assert.NotContains(t, deps, "go.opentelemetry.io")
	userMod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	assert.Contains(t, string(userMod), "\ngo "+goDirective(string(rootMod))+"\n",
		"the user's go directive is not raised above the crl module's")
	if testing.Verbose() {
		t.Logf("go list -m all:\n%s", modules)
	}
}

func goDirective(mod string) string {
	for _, line := range strings.Split(mod, "\n") {
		if v, ok := strings.CutPrefix(line, "go "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
