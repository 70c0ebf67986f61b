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
	"flag"
	"fmt"
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
	crlvet.Analyzer.Flags.VisitAll(func(f *flag.Flag) { fs.Var(f.Value, f.Name, f.Usage) })
	if err := fs.Parse(args); err != nil {
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
	type finding struct {
		pos string
		key [2]any // file, offset: the order of the findings
		msg string
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
		checked[act.Package.PkgPath] = true
		for _, d := range act.Diagnostics {
			p := act.Package.Fset.Position(d.Pos)
			line := p.String() + ": " + d.Message
			if seen[line] {
				continue
			}
			seen[line] = true
			found = append(found, finding{p.String(), [2]any{p.Filename, p.Offset}, d.Message})
		}
	}
	if failed != nil {
		fmt.Fprintf(stderr, "crl vet: %v\n", failed)
		return 2
	}
	sort.Slice(found, func(i, j int) bool {
		a, b := found[i].key, found[j].key
		if a[0].(string) != b[0].(string) {
			return a[0].(string) < b[0].(string)
		}
		return a[1].(int) < b[1].(int)
	})
	for _, f := range found {
		fmt.Fprintf(stdout, "%s: %s\n", f.pos, f.msg)
	}
	if len(found) > 0 {
		fmt.Fprintf(stderr, "crl vet: %d place(s) where a crl handle loses its retries\n", len(found))
		return 1
	}
	fmt.Fprintf(stdout, "ok: %d package(s), no crl handle loses its retries\n", len(checked))
	return 0
}
