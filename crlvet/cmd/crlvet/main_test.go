package main

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testdata is the analyzer's test module (example.com/vetme).
func testdata(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "testdata"))
	require.NoError(t, err)
	return dir
}

// runIn runs name with args in dir and returns its exit code and output.
func runIn(t *testing.T, dir, name string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out.String(), errOut.String()
	}
	require.NoError(t, err)
	return 0, out.String(), errOut.String()
}

// buildCrlvet builds the command into a temporary directory.
func buildCrlvet(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "crlvet")
	code, _, errOut := runIn(t, ".", "go", "build", "-o", bin, ".")
	require.Equal(t, 0, code, errOut)
	return bin
}

func TestCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and loads packages")
	}
	bin, dir := buildCrlvet(t), testdata(t)

	code, out, errOut := runIn(t, dir, bin, "./sqlxuse", "./gormuse")
	assert.Equal(t, 1, code, "findings: exit 1: %s", errOut)
	assert.Contains(t, out, filepath.Join(dir, "gormuse", "gormuse.go")+":24:")
	assert.Contains(t, out, "use gormcrl.Transaction(db.WithContext(ctx), fn)")
	assert.Contains(t, out, "db.DB is the embedded *sqlx.DB of a *sqlxcrl.DB")
	assert.Equal(t, 15, strings.Count(out, "\n"), "10 sqlx places, 5 GORM ones:\n%s", out)
	assert.Contains(t, errOut, "15 place(s)")

	code, out, errOut = runIn(t, dir, bin, "./clean", "./gormplain")
	assert.Equal(t, 0, code, "%s%s", out, errOut)
	assert.Contains(t, out, "ok: 2 package(s)")
	assert.Contains(t, out, "not checked: the transactions on database/sql, sqlx, GORM, ent and bun handles of 1 package(s) that import no crl package (example.com/vetme/gormplain); run crl vet -all")

	code, out, errOut = runIn(t, dir, bin, "-all", "./clean", "./gormplain")
	assert.Equal(t, 1, code, "%s%s", out, errOut)
	assert.Contains(t, out, "db.Transaction runs the closure once")

	code, out, _ = runIn(t, dir, bin, "-gormall", "./gormplain")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "db.Transaction runs the closure once")

	code, _, errOut = runIn(t, dir, bin, "./no/such/package")
	assert.Equal(t, 2, code, "a package that cannot be loaded")
	assert.NotEmpty(t, errOut)

	code, _, _ = runIn(t, dir, bin, "-nosuchflag", "./clean")
	assert.Equal(t, 2, code, "an unknown flag")

	code, _, errOut = runIn(t, dir, bin, "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, errOut, "usage: crlvet [-all] [packages]")
}

// The command is a vet tool: go vet runs it with its own protocol (-flags,
// -V=full, a .cfg file per package).
func TestGoVetVettool(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and runs go vet")
	}
	bin, dir := buildCrlvet(t), testdata(t)

	code, _, errOut := runIn(t, dir, "go", "vet", "-vettool="+bin, "./gormuse")
	assert.NotEqual(t, 0, code, "go vet fails on findings")
	assert.Contains(t, errOut, "gormuse.go:24:")
	assert.Contains(t, errOut, "gormcrl.Transaction(db.WithContext(ctx), fn)")
	assert.Contains(t, errOut, "sqlDB.ExecContext runs on the *sql.DB of db.DB()")

	code, _, errOut = runIn(t, dir, "go", "vet", "-vettool="+bin, "./sqlxuse")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, errOut, "tx.Tx is the embedded *sqlx.Tx")

	code, out, errOut := runIn(t, dir, "go", "vet", "-vettool="+bin, "./clean", "./gormplain")
	assert.Equal(t, 0, code, "%s%s", out, errOut)

	code, _, errOut = runIn(t, dir, "go", "vet", "-vettool="+bin, "-crlvet.gormall", "./gormplain")
	assert.NotEqual(t, 0, code, errOut)
	assert.Contains(t, errOut, "db.Transaction runs the closure once")
}
