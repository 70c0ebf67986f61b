// Command crlvet reports Go code that loses the retries of crl's sqlx and
// GORM adapters (the analyzer of package crlvet).
//
//	crlvet ./...                          # as `crl vet ./...` runs it
//	go vet -vettool=$(which crlvet) ./... # as a vet tool
//
// Run on packages it prints each finding as file:line:col: message and
// exits 1 when it found one, 0 when it found none, 2 when the packages
// cannot be loaded. Run by go vet (-vettool) it speaks go vet's protocol.
package main

import (
	"errors"
	"flag"
	"fmt"
	"go/token"
	"io"
	"os"
	"sort"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/analysis/unitchecker"
	"golang.org/x/tools/go/packages"

	"github.com/crl-go/crl/crlvet"
)

func main() {
	args := os.Args[1:]
	if vetProtocol(args) {
		unitchecker.Main(crlvet.Analyzer) // exits
	}
	os.Exit(run(args, os.Stdout, os.Stderr))
}

// vetProtocol reports whether go vet runs the command: it asks for the
// flags (-flags) and the version (-V=full), then passes a .cfg file.
func vetProtocol(args []string) bool {
	for _, a := range args {
		if a == "-flags" || strings.HasPrefix(a, "-V") || strings.HasSuffix(a, ".cfg") {
			return true
		}
	}
	return false
}

// run loads the packages that args name (default: the one in the working
// directory), analyzes them and prints the findings.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("crlvet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: crlvet [-gormall] [packages]\n\n%s\n\nFlags:\n", crlvet.Analyzer.Doc)
		fs.PrintDefaults()
	}
	crlvet.Analyzer.Flags.VisitAll(func(f *flag.Flag) { fs.Var(f.Value, f.Name, f.Usage) })
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	patterns := fs.Args()
	if len(patterns) == 0 {
		patterns = []string{"."}
	}
	cfg := &packages.Config{Mode: packages.LoadAllSyntax, Tests: true}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		fmt.Fprintf(stderr, "crl vet: %v\n", err)
		return 2
	}
	if n := packages.PrintErrors(pkgs); n > 0 {
		fmt.Fprintf(stderr, "crl vet: %d error(s) loading %s\n", n, strings.Join(patterns, " "))
		return 2
	}
	graph, err := checker.Analyze([]*analysis.Analyzer{crlvet.Analyzer}, pkgs, nil)
	if err != nil {
		fmt.Fprintf(stderr, "crl vet: %v\n", err)
		return 2
	}
	var (
		found   []finding
		seen    = map[string]bool{} // a package and its test variant share files
		checked = map[string]bool{}
		failed  error
	)
	for act := range graph.All() {
		if !act.IsRoot {
			continue
		}
		if act.Err != nil && failed == nil {
			failed = act.Err
		}
		if !strings.HasSuffix(act.Package.PkgPath, ".test") { // a test's generated main
			checked[act.Package.PkgPath] = true
		}
		for _, d := range act.Diagnostics {
			f := finding{act.Package.Fset.Position(d.Pos), d.Message}
			if line := f.String(); !seen[line] {
				seen[line] = true
				found = append(found, f)
			}
		}
	}
	if failed != nil {
		fmt.Fprintf(stderr, "crl vet: %v\n", failed)
		return 2
	}
	sort.Slice(found, func(i, j int) bool {
		a, b := found[i].pos, found[j].pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Offset < b.Offset
	})
	for _, f := range found {
		fmt.Fprintln(stdout, f)
	}
	if len(found) > 0 {
		fmt.Fprintf(stderr, "crl vet: %d place(s) where a crl handle loses its retries\n", len(found))
		return 1
	}
	fmt.Fprintf(stdout, "ok: %d package(s), no crl handle loses its retries\n", len(checked))
	return 0
}

// finding is one place that loses retries.
type finding struct {
	pos token.Position
	msg string
}

// String is the finding as go vet prints one: file:line:col: message.
func (f finding) String() string { return f.pos.String() + ": " + f.msg }
