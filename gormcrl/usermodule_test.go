package gormcrl_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The program of a user on GORM with SQL Server, pinned to older
// versions (gorm v1.30.0, gorm.io/driver/sqlserver v1.6.3 and the
// go-mssqldb v1.8.2 it requires), before and after it adds gormcrl.
const (
	userGoMod = `module example.com/orders

go 1.24

require (
	github.com/microsoft/go-mssqldb v1.8.2
	gorm.io/driver/sqlserver v1.6.3
	gorm.io/gorm v1.30.0
)
`
	userProgramBefore = `package main

import (
	"fmt"

	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
)

func main() {
	db, err := gorm.Open(sqlserver.Open("sqlserver://localhost?database=orders"), &gorm.Config{})
	fmt.Println(db != nil, err)
}
`
	userProgramAfter = `package main

import (
	"fmt"

	"github.com/crl-go/crl/gormcrl"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
)

func main() {
	db, err := gorm.Open(gormcrl.Open(sqlserver.Open("sqlserver://localhost?database=orders")), &gorm.Config{})
	fmt.Println(db != nil, err)
}
`
)

// TestUserModuleKeepsItsVersions builds the module graph of a GORM + SQL
// Server program pinned to older versions, then adds gormcrl (a replace
// to this checkout) and checks that GORM, its SQL Server dialector,
// go-mssqldb, golang.org/x/crypto and everything else the program
// selected keep their versions, and that the program's go directive is
// raised no higher than crl's.
func TestUserModuleKeepsItsVersions(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		t.Skipf("no go command: %v", err)
	}
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	dir := t.TempDir()
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
	write := func(name, content string) {
		t.Helper()
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	// The sums of the program's own versions (testdata) and of crl's
	// requirements (crl's go.sum), so that go mod tidy verifies them
	// without asking the checksum database.
	userSum, err := os.ReadFile(filepath.Join("testdata", "usermodule.go.sum"))
	require.NoError(t, err)
	rootSum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	write("go.sum", string(userSum)+string(rootSum))

	write("go.mod", userGoMod)
	write("main.go", userProgramBefore)
	run("mod", "tidy")
	before := moduleVersions(t, run("list", "-m", "-json", "all"))
	require.Equal(t, "v1.30.0", before["gorm.io/gorm"], "the program's own graph")
	require.Equal(t, "v1.8.2", before["github.com/microsoft/go-mssqldb"], "the program's own graph")

	write("go.mod", userGoMod+"\nrequire github.com/crl-go/crl v0.0.0\n\nreplace github.com/crl-go/crl => "+root+"\n")
	write("main.go", userProgramAfter)
	run("mod", "tidy")
	run("build", "./...")
	after := moduleVersions(t, run("list", "-m", "-json", "all"))

	var moved []string
	for m, v := range before {
		if after[m] != v {
			moved = append(moved, m+" "+v+" → "+after[m])
		}
	}
	slices.Sort(moved)
	assert.Empty(t, moved, "modules of the program that adding crl moved")
	for _, m := range []string{"gorm.io/gorm", "gorm.io/driver/sqlserver", "github.com/microsoft/go-mssqldb", "golang.org/x/crypto"} {
		assert.Equal(t, before[m], after[m], "%s: adding crl changed its version", m)
	}

	userMod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	rootMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	assert.Equal(t, goLine(string(rootMod)), goLine(string(userMod)), "the program's go directive is raised to crl's, no further")
}

// moduleVersions reads the output of go list -m -json all.
func moduleVersions(t *testing.T, out string) map[string]string {
	t.Helper()
	versions := map[string]string{}
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var m struct{ Path, Version string }
		require.NoError(t, dec.Decode(&m))
		versions[m.Path] = m.Version
	}
	return versions
}

func goLine(mod string) string {
	for _, line := range strings.Split(mod, "\n") {
		if v, ok := strings.CutPrefix(line, "go "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
