package main

import (
	"bufio"
	"errors"
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

	"github.com/crl-go/crl/internal/testsupport/usermodule"
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

// skipWithoutCrlvetsGo skips t under a Go older than crlvet's: crlvet is
// a module of its own (golang.org/x/tools) that needs a newer Go than the
// library, so under the library's lowest Go (CI's lowest-Go pass) there is
// nothing to build it with.
func skipWithoutCrlvetsGo(t *testing.T) {
	t.Helper()
	mod, err := os.ReadFile(filepath.Join("..", "..", "crlvet", "go.mod"))
	require.NoError(t, err)
	if need := "go" + usermodule.GoDirective(string(mod)); version.IsValid(runtime.Version()) && version.Compare(runtime.Version(), need) < 0 {
		t.Skipf("crlvet needs %s; this is %s", need, runtime.Version())
	}
}

// withCrlvet builds the analyzer's command (module crlvet) and puts it on
// PATH, where crl vet finds it.
func withCrlvet(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds crlvet and loads packages")
	}
	skipWithoutCrlvetsGo(t)
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
	assert.Contains(t, out, "db.DB is the embedded *sqlx.DB of a *sqlxcrl.DB: its Get and Select lose sqlxcrl's whole-result retry")
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
	// Every example program of the library's module: no false positive,
	// with -all too (the two closures that count their runs say why).
	code, out, errOut := runCRL("vet", "../../examples/...")
	require.Equal(t, 0, code, "%s%s", out, errOut)
	assert.Regexp(t, `ok: [0-9]+ package\(s\)`, out)
	code, out, errOut = runCRL("vet", "-all", "../../examples/...")
	require.Equal(t, 0, code, "%s%s", out, errOut)
	code, out, errOut = runCRL("vet", "../../examples/sqlx", "../../examples/quickstart", "../../examples/gorm")
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
	t.Setenv("PATH", t.TempDir()) // neither crlvet nor go
	code, _, errOut := runCRL("vet", "./testdata/vetme")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "the go command is not on PATH")
	assert.Contains(t, errOut, "go -C crlvet install ./cmd/crlvet")
}

func TestVetFlags(t *testing.T) {
	for _, a := range []string{"-all", "--all", "-all=true", "-gormall", "-gormall=false"} {
		assert.True(t, vetFlag(a), a)
	}
	for _, a := range []string{"-x", "-allx", "-gorm"} {
		assert.False(t, vetFlag(a), a)
	}
}

// Where crl vet gets crlvet when it is neither beside crl nor on PATH.
func TestVetBuildPlan(t *testing.T) {
	clone, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)

	b, err := buildPlan(vetEnv{version: "(devel)", source: clone})
	require.NoError(t, err, "built from a clone: the clone's crlvet module")
	assert.Equal(t, filepath.Join(clone, "crlvet"), b.dir)
	assert.Equal(t, []string{"build", "-o", filepath.Join("out", "crlvet"), "./cmd/crlvet"}, b.args("out"))

	// Installed with go install github.com/crl-go/crl/cmd/crl@v1.4.2: the
	// module cache holds no crlvet (a nested module is not in crl's zip).
	b, err = buildPlan(vetEnv{version: "v1.4.2", source: t.TempDir()})
	require.NoError(t, err)
	assert.Empty(t, b.dir)
	assert.Equal(t, []string{"install", "github.com/crl-go/crl/crlvet/cmd/crlvet@v1.4.2"}, b.args("out"))

	for _, v := range []string{"(devel)", "", "v0.0.0-20261201120000-0123456789ab+dirty"} {
		_, err = buildPlan(vetEnv{version: v})
		require.Error(t, err, v)
		assert.Contains(t, err.Error(), "go install ./cmd/crl && go -C crlvet install ./cmd/crlvet", v)
	}
}

// goCommand returns the go command that runs the tests.
func goCommand(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("go")
	require.NoError(t, err)
	return bin
}

// installInto runs go install (or go -C crlvet install) with args from the
// root of the clone into gobin.
func installInto(t *testing.T, gobin string, args ...string) {
	t.Helper()
	cmd := exec.Command(goCommand(t), args...)
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "GOBIN="+gobin)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// runInstalled runs the installed crl vet on the vetme package with a
// PATH of gobin and go's directory only.
func runInstalled(t *testing.T, gobin string) (int, string, string) {
	t.Helper()
	t.Setenv("PATH", gobin+string(os.PathListSeparator)+filepath.Dir(goCommand(t)))
	cmd := exec.Command(filepath.Join(gobin, "crl"), "vet", "./testdata/vetme")
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out.String(), errOut.String()
	}
	require.NoError(t, err)
	return 0, out.String(), errOut.String()
}

// The README's install step from a clone, go install ./cmd/crl, into a
// clean GOBIN: crl vet builds the analyzer from the clone and runs it.
func TestVetAfterInstallingCrlAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("installs crl and builds crlvet")
	}
	skipWithoutCrlvetsGo(t)
	gobin := t.TempDir()
	installInto(t, gobin, "install", "./cmd/crl")
	_, err := os.Stat(filepath.Join(gobin, "crlvet"))
	require.True(t, os.IsNotExist(err), "GOBIN holds crl only")
	code, out, errOut := runInstalled(t, gobin)
	assert.Equal(t, 1, code, "%s%s", out, errOut)
	assert.Contains(t, out, "db.DB is the embedded *sqlx.DB of a *sqlxcrl.DB")
	assert.Contains(t, errOut, "6 place(s)")
	entries, err := os.ReadDir(gobin)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "crl vet leaves nothing in GOBIN")
}

// The one line that installs both commands from a clone: crl vet runs the
// crlvet beside it, which go vet -vettool can use too.
func TestVetAfterInstallingBoth(t *testing.T) {
	if testing.Short() {
		t.Skip("installs crl and crlvet")
	}
	skipWithoutCrlvetsGo(t)
	gobin := t.TempDir()
	installInto(t, gobin, "install", "./cmd/crl")
	installInto(t, gobin, "-C", "crlvet", "install", "./cmd/crlvet")
	code, out, errOut := runInstalled(t, gobin)
	assert.Equal(t, 1, code, "%s%s", out, errOut)
	assert.Contains(t, errOut, "6 place(s)")
}
