package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wantLines returns the lines of file marked "// want".
func wantLines(t *testing.T, file string) map[int]bool {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	want := map[int]bool{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if strings.HasSuffix(strings.TrimSpace(sc.Text()), "// want") {
			want[n] = true
		}
	}
	require.NoError(t, sc.Err())
	return want
}

func TestVetFindsLostRetries(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list -export")
	}
	file, err := filepath.Abs(filepath.Join("testdata", "vetme", "vetme.go"))
	require.NoError(t, err)
	want := wantLines(t, file)
	require.Len(t, want, 6, "the test file marks 6 lines")

	code, out, errOut := runCRL("vet", "./testdata/vetme")
	assert.Equal(t, 1, code, "vet exits 1 when it finds a place: %s", errOut)
	got := map[int]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		pos, msg, ok := strings.Cut(line, ": ")
		require.True(t, ok, "a finding is file:line:col: message: %q", line)
		parts := strings.Split(pos, ":")
		require.Len(t, parts, 3, "file:line:col in %q", line)
		assert.Equal(t, file, parts[0], "the file")
		n, err := strconv.Atoi(parts[1])
		require.NoError(t, err, "the line in %q", line)
		got[n] = true
		assert.Contains(t, msg, "itself", "the message says what to pass instead: %q", msg)
	}
	assert.Equal(t, want, got, "the lines vet reports are the lines marked want")
	assert.Contains(t, out, "db.DB is the embedded *sqlx.DB of a *sqlxcrl.DB: statements run on it are not retried")
	assert.Contains(t, out, "tx.Tx is the embedded *sqlx.Tx")
	assert.Contains(t, errOut, "6 place(s)")
}

func TestVetCleanPackages(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list -export")
	}
	code, out, errOut := runCRL("vet", "../../examples/sqlx", "../../examples/quickstart")
	require.Equal(t, 0, code, "%s%s", out, errOut)
	assert.Contains(t, out, "ok: 2 package(s)")

	code, _, errOut = runCRL("vet", "./no/such/package")
	assert.Equal(t, 2, code, "a package that cannot be loaded")
	assert.NotEmpty(t, errOut)

	code, _, errOut = runCRL("vet", "-x")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "unknown flag -x")
}
