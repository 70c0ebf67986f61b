// Package usermodule builds a user's module against this checkout of crl,
// for the tests that check what adding crl does to a user's module graph
// (hooks: no metrics library; gormcrl: no version moves).
package usermodule

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Module is a user's module in a temporary folder.
type Module struct {
	t     testing.TB
	gobin string
	// Dir is the module's folder; Root the crl checkout's.
	Dir, Root string
}

// New returns an empty module, skipping t under -short or without a go
// command. root is the crl checkout, relative to the test's package
// folder (".." for a package one level down).
func New(t testing.TB, root string) *Module {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the go command")
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		t.Skipf("no go command: %v", err)
	}
	abs, err := filepath.Abs(root)
	require.NoError(t, err)
	return &Module{t: t, gobin: gobin, Dir: t.TempDir(), Root: abs}
}

// Write writes a file of the module.
func (m *Module) Write(name, content string) {
	m.t.Helper()
	require.NoError(m.t, os.WriteFile(filepath.Join(m.Dir, name), []byte(content), 0o644))
}

// Read reads a file of the module, or of the checkout when root is set.
func (m *Module) Read(name string, root bool) string {
	m.t.Helper()
	dir := m.Dir
	if root {
		dir = m.Root
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(m.t, err)
	return string(b)
}

// SeedSum writes go.sum: extra (the sums of the user's own versions) and
// crl's go.sum, so that go mod tidy verifies every module the program can
// need without asking the checksum database (CI's machine may have no
// network; modules the cache lacks still come from the module proxy).
func (m *Module) SeedSum(extra string) {
	m.t.Helper()
	m.Write("go.sum", extra+m.Read("go.sum", true))
}

// RequireCrl is the go.mod text that adds this checkout to a module.
func (m *Module) RequireCrl() string {
	return "\nrequire github.com/crl-go/crl v0.0.0\n\nreplace github.com/crl-go/crl => " + m.Root + "\n"
}

// Go runs the go command in the module and returns its output; a failure
// fails the test with it. No workspace file of the caller's applies.
func (m *Module) Go(args ...string) string {
	m.t.Helper()
	cmd := exec.Command(m.gobin, args...)
	cmd.Dir = m.Dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	require.NoError(m.t, err, "go %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

// Versions returns the module's graph, path to version (go list -m -json all).
func (m *Module) Versions() map[string]string {
	m.t.Helper()
	versions := map[string]string{}
	dec := json.NewDecoder(strings.NewReader(m.Go("list", "-m", "-json", "all")))
	for dec.More() {
		var v struct{ Path, Version string }
		require.NoError(m.t, dec.Decode(&v))
		versions[v.Path] = v.Version
	}
	return versions
}

// GoDirective returns the go directive of a go.mod text ("" when none).
func GoDirective(mod string) string {
	for _, line := range strings.Split(mod, "\n") {
		if v, ok := strings.CutPrefix(line, "go "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
