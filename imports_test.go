package crl_test

import (
	"bufio"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// module is the root module's path.
const module = "github.com/crl-go/crl"

// floors are the library's packages from the bottom up: a package imports
// only packages of a lower floor (DESIGN's arrows: core ← config ← crl ←
// sqlxcrl, gormcrl). Floor 0 is internal/text and internal/tables, what
// sits below core.
var floors = map[string]int{
	"internal/text": 0, "internal/tables": 0,
	"core":    1,
	"config":  2,
	"crl":     3,
	"sqlxcrl": 4, "gormcrl": 4,
}

// imports returns the root module's packages (non-test files), each with
// the module's packages it imports, as go list reports them.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{join .Imports ","}}`, "./...").Output()
	require.NoError(t, err, "go list")
	graph := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, list, _ := strings.Cut(line, "|")
		graph[pkg] = nil
		for _, imp := range strings.Split(list, ",") {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				graph[pkg] = append(graph[pkg], imp)
			}
		}
	}
	require.Contains(t, graph, module, "go list ./... lists the root package")
	return graph
}

// node names a package of the module as docs/architecture.md draws it:
// "crl" for the root, the path under the module otherwise, with
// internal/text/…, internal/tables/…, internal/testsupport/… and
// examples/… each drawn as one.
func node(pkg string) string {
	if pkg == module {
		return "crl"
	}
	rel := strings.TrimPrefix(pkg, module+"/")
	for _, group := range []string{"internal/text", "internal/tables", "internal/testsupport", "examples"} {
		if strings.HasPrefix(rel, group+"/") {
			return group
		}
	}
	return rel
}

// No package of the library imports one on its own floor or above it;
// every package under internal/ imports only packages under internal/
// (internal/ sits below core, so whatever imports it imports downward);
// and the hooks, like the hook modules, import no internal/ package.
func TestImportFloors(t *testing.T) {
	for pkg, list := range imports(t) {
		from := node(pkg)
		for _, imp := range list {
			to := node(imp)
			if strings.HasPrefix(from, "internal/") {
				assert.True(t, strings.HasPrefix(to, "internal/"), "%s (under internal/, below core) imports %s", pkg, imp)
			}
			if strings.HasPrefix(from, "hooks") {
				assert.False(t, strings.HasPrefix(to, "internal/"), "%s, an observer that its own modules build on, imports %s", pkg, imp)
			}
			f, ok := floors[from]
			if !ok || f == 0 { // floor 0's packages: the internal/ rule above
				continue
			}
			g, ok := floors[to]
			assert.True(t, ok && g < f, "%s (floor %d) imports %s, which is not on a floor below it", pkg, f, imp)
		}
	}
}

// The modules of their own in the repository (hooks, examples,
// benchmarks, faults, crlvet, …) import no package under crl's
// internal/: its names are nobody's contract. Their own internal/
// packages are theirs. Test files included; read with go/parser, so that
// no module's dependencies or toolchain are needed.
func TestOtherModulesImportNoInternalPackage(t *testing.T) {
	mods := otherModules(t)
	require.NotEmpty(t, mods)
	for dir, path := range mods {
		err := filepath.WalkDir(dir, func(name string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(name, ".go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, im := range f.Imports {
				imp, err := strconv.Unquote(im.Path.Value)
				if err != nil {
					return err
				}
				if strings.HasPrefix(imp, module+"/") && strings.Contains(imp+"/", "/internal/") && !strings.HasPrefix(imp, path+"/") {
					t.Errorf("%s (module %s) imports %s", name, path, imp)
				}
			}
			return nil
		})
		require.NoError(t, err)
	}
}

// otherModules returns the directories of the repository's modules other
// than the root, each with its module path.
func otherModules(t *testing.T) map[string]string {
	t.Helper()
	mods := map[string]string{}
	err := filepath.WalkDir(".", func(name string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() || d.Name() != "go.mod" || name == "go.mod" {
			return err
		}
		data, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		for sc.Scan() {
			if path, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
				mods[filepath.Dir(name)] = strings.Trim(strings.TrimSpace(path), `"`)
			}
		}
		return nil
	})
	require.NoError(t, err)
	return mods
}

// docs/architecture.md draws the imports between the module's packages as
// a list of arrows under "## Imports"; the drawing and go list agree,
// arrow for arrow.
func TestArchitectureDrawsTheImports(t *testing.T) {
	want := map[string]bool{}
	for pkg, list := range imports(t) {
		for _, imp := range list {
			if from, to := node(pkg), node(imp); from != to {
				want[from+" → "+to] = true
			}
		}
	}
	drawn := drawnArrows(t, "docs/architecture.md")
	var missing, extra []string
	for a := range want {
		if !drawn[a] {
			missing = append(missing, a)
		}
	}
	for a := range drawn {
		if !want[a] {
			extra = append(extra, a)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	assert.Empty(t, missing, "imports that docs/architecture.md does not draw")
	assert.Empty(t, extra, "arrows of docs/architecture.md that no import makes")
}

// drawnArrows reads the arrows of the first fenced block after the
// "## Imports" heading of the Markdown file name: each line is a package,
// "→", and the packages it imports, separated by spaces.
func drawnArrows(t *testing.T, name string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(data), "\n## Imports\n")
	require.True(t, ok, "%s has a section ## Imports", name)
	_, block, ok := strings.Cut(after, "```")
	require.True(t, ok, "%s: ## Imports has a fenced block", name)
	block, _, ok = strings.Cut(block, "```")
	require.True(t, ok, "%s: the fenced block of ## Imports ends", name)
	arrows := map[string]bool{}
	for _, line := range strings.Split(block, "\n")[1:] {
		from, to, ok := strings.Cut(line, "→")
		if !ok {
			continue
		}
		from = strings.TrimSpace(from)
		for _, imp := range strings.Fields(to) {
			require.NotEqual(t, from, imp, "%s: an arrow from a package to itself", name)
			arrows[from+" → "+imp] = true
		}
	}
	require.NotEmpty(t, arrows, "%s: no arrow under ## Imports", name)
	return arrows
}
