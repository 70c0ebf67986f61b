// Command crlvet reports Go code that loses crl's retries, and closures
// given to crl's retry helpers that are not safe to run again (the
// analyzer of package crlvet).
//
//	crlvet ./...                          # as `crl vet ./...` runs it
//	go vet -vettool=$(which crlvet) ./... # as a vet tool
//
// Run on packages it prints each finding as file:line:col: message and
// exits 1 when it found one, 0 when it found none (saying which packages'
// handles were not checked: those that import no crl package, without
// -all), 2 when the packages cannot be loaded. Run by go vet (-vettool) it
// speaks go vet's protocol.
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
	patterns, code := parseArgs(args, stderr)
	if patterns == nil {
		return code
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
	r, err := collect(graph)
	if err != nil {
		fmt.Fprintf(stderr, "crl vet: %v\n", err)
		return 2
	}
	return r.print(stdout, stderr)
}

// parseArgs parses the flags (the analyzer's) and returns the package
// patterns, or nil and the exit code.
func parseArgs(args []string, stderr io.Writer) ([]string, int) {
	fs := flag.NewFlagSet("crlvet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: crlvet [-all] [packages]\n\n%s\n\nFlags:\n", crlvet.Analyzer.Doc)
		fs.PrintDefaults()
	}
	crlvet.Analyzer.Flags.VisitAll(func(f *flag.Flag) { fs.Var(f.Value, f.Name, f.Usage) })
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil, 0
	} else if err != nil {
		return nil, 2
	}
	if fs.NArg() == 0 {
		return []string{"."}, 0
	}
	return fs.Args(), 0
}

// report is what the analyzer found in the packages it was run on.
type report struct {
	found     []finding
	checked   map[string]bool // the packages (not a test's generated main)
	unchecked map[string]bool // those whose handles were not checked (no crl import, no -all)
}

// collect gathers the findings of the root packages, once each (a package
// and its test variant share files).
func collect(graph *checker.Graph) (*report, error) {
	r := &report{checked: map[string]bool{}, unchecked: map[string]bool{}}
	seen := map[string]bool{}
	for act := range graph.All() {
		if !act.IsRoot {
			continue
		}
		if act.Err != nil {
			return nil, act.Err
		}
		r.note(act.Package.PkgPath, act.Result)
		for _, d := range act.Diagnostics {
			f := finding{act.Package.Fset.Position(d.Pos), d.Message}
			if line := f.String(); !seen[line] {
				seen[line] = true
				r.found = append(r.found, f)
			}
		}
	}
	sort.Slice(r.found, func(i, j int) bool {
		a, b := r.found[i].pos, r.found[j].pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Offset < b.Offset
	})
	return r, nil
}

// note records that the package at path was checked, and whether its
// handles were.
func (r *report) note(path string, result any) {
	if strings.HasSuffix(path, ".test") { // a test's generated main
		return
	}
	path = strings.TrimSuffix(path, "_test")
	r.checked[path] = true
	if res, ok := result.(*crlvet.Result); ok && res.HandlesChecked {
		r.unchecked[path] = false
	} else if _, ok := r.unchecked[path]; !ok {
		r.unchecked[path] = true
	}
}

// print prints the findings, or that there are none, and returns the exit
// code.
func (r *report) print(stdout, stderr io.Writer) int {
	for _, f := range r.found {
		fmt.Fprintln(stdout, f)
	}
	if len(r.found) > 0 {
		fmt.Fprintf(stderr, "crl vet: %d place(s) that lose crl's retries or are not safe to run again\n", len(r.found))
		return 1
	}
	fmt.Fprintf(stdout, "ok: %d package(s), no place loses crl's retries\n", len(r.checked))
	var unchecked []string
	for path, u := range r.unchecked {
		if u {
			unchecked = append(unchecked, path)
		}
	}
	if len(unchecked) > 0 {
		sort.Strings(unchecked)
		fmt.Fprintf(stdout, "not checked: the transactions on database/sql, sqlx, GORM, ent and bun handles of %d package(s) that import no crl package "+
			"(%s); run crl vet -all to check them too\n", len(unchecked), strings.Join(unchecked, ", "))
	}
	return 0
}

// finding is one place that loses retries.
type finding struct {
	pos token.Position
	msg string
}

// String is the finding as go vet prints one: file:line:col: message.
func (f finding) String() string { return f.pos.String() + ": " + f.msg }
