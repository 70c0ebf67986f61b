package main

import (
	"bufio"
	"go/version"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/internal/usermodule"
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

// withCrlvet builds the analyzer's command (module crlvet) and puts it on
// PATH, where crl vet finds it.
func withCrlvet(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds crlvet and loads packages")
	}
	// crlvet is a module of its own (golang.org/x/tools) that needs a
	// newer Go than the library: under the library's lowest Go (CI's
	// lowest-Go pass) there is nothing to build it with.
	mod, err := os.ReadFile(filepath.Join("..", "..", "crlvet", "go.mod"))
	require.NoError(t, err)
	if need := "go" + usermodule.GoDirective(string(mod)); version.IsValid(runtime.Version()) && version.Compare(runtime.Version(), need) < 0 {
		t.Skipf("crlvet needs %s; this is %s", need, runtime.Version())
	}
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "crlvet"), "./cmd/crlvet")
	build.Dir = filepath.Join("..", "..", "crlvet")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// findings returns the lines of crl vet's output by file and line.
func findings(t *testing.T, out string) map[string]map[int]string {
	t.Helper()
	got := map[string]map[int]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		pos, msg, ok := strings.Cut(line, ": ")
		require.True(t, ok, "a finding is file:line:col: message: %q", line)
		parts := strings.Split(pos, ":")
		require.Len(t, parts, 3, "file:line:col in %q", line)
		n, err := strconv.Atoi(parts[1])
		require.NoError(t, err, "the line in %q", line)
		if got[parts[0]] == nil {
			got[parts[0]] = map[int]string{}
		}
		got[parts[0]][n] = msg
	}
	return got
}

func TestVetFindsLostRetries(t *testing.T) {
	withCrlvet(t)
	sqlxFile, err := filepath.Abs(filepath.Join("testdata", "vetme", "vetme.go"))
	require.NoError(t, err)
	gormFile, err := filepath.Abs(filepath.Join("testdata", "vetgorm", "vetgorm.go"))
	require.NoError(t, err)
	wantSqlx, wantGorm := wantLines(t, sqlxFile), wantLines(t, gormFile)
	require.Len(t, wantSqlx, 6, "the sqlx test file marks 6 lines")
	require.Len(t, wantGorm, 1, "the GORM test file marks 1 line")

	code, out, errOut := runCRL("vet", "./testdata/vetme", "./testdata/vetgorm")
	assert.Equal(t, 1, code, "vet exits 1 when it finds a place: %s", errOut)
	got := findings(t, out)
	for file, want := range map[string]map[int]bool{sqlxFile: wantSqlx, gormFile: wantGorm} {
		lines := map[int]bool{}
		for n, msg := range got[file] {
			lines[n] = true
			assert.Regexp(t, "itself|gormcrl.Transaction", msg, "the message says what to write instead")
		}
		assert.Equal(t, want, lines, "the lines vet reports in %s are the lines marked want", file)
	}
	assert.Contains(t, out, "db.DB is the embedded *sqlx.DB of a *sqlxcrl.DB: statements run on it are not retried")
	assert.Contains(t, out, "tx.Tx is the embedded *sqlx.Tx")
	assert.Contains(t, out, "use gormcrl.Transaction(db.WithContext(ctx), fn)")
	assert.Contains(t, errOut, "7 place(s)")

	// Each on its own exits 1 too.
	for _, pkg := range []string{"./testdata/vetme", "./testdata/vetgorm"} {
		code, _, errOut := runCRL("vet", pkg)
		assert.Equal(t, 1, code, "%s: %s", pkg, errOut)
	}
}

func TestVetCleanPackages(t *testing.T) {
	withCrlvet(t)
	code, out, errOut := runCRL("vet", "../../examples/sqlx", "../../examples/quickstart", "../../examples/gorm")
	require.Equal(t, 0, code, "%s%s", out, errOut)
	assert.Contains(t, out, "ok: 3 package(s)")

	code, _, errOut = runCRL("vet", "./no/such/package")
	assert.Equal(t, 2, code, "a package that cannot be loaded")
	assert.NotEmpty(t, errOut)

	code, _, errOut = runCRL("vet", "-x")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "unknown flag -x")

	code, out, errOut = runCRL("vet", "-gormall", "../../examples/sqlx")
	assert.Equal(t, 0, code, "%s%s", out, errOut)
}

func TestVetWithoutCrlvet(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	code, _, errOut := runCRL("vet", "./testdata/vetme")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "go install github.com/crl-go/crl/crlvet/cmd/crlvet@latest")
}
