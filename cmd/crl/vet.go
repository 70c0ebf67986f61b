package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
)

// crlvetPackage is the analyzer's command, in a module of its own
// (github.com/crl-go/crl/crlvet) so that the library does not require
// golang.org/x/tools.
const crlvetPackage = "github.com/crl-go/crl/crlvet/cmd/crlvet"

// vet runs crlvet, the command of the analyzer, on the packages args
// name, with its output and exit code: 1 when it finds a place that loses
// retries, 0 when it finds none, 2 when the packages cannot be loaded or
// crlvet cannot be found or built. The flags are the analyzer's: -all
// (and its former name -gormall).
func vet(args []string, stdout, stderr io.Writer) int {
	for _, a := range args {
		if strings.HasPrefix(a, "-") && !vetFlag(a) {
			fmt.Fprintf(stderr, "crl vet: unknown flag %s: expected -all or packages such as ./...\n", a)
			return 2
		}
	}
	bin, cleanup, err := analyzerCommand(hostEnv(), stderr)
	if err != nil {
		fmt.Fprintf(stderr, "crl vet: %v\n", err)
		return 2
	}
	defer cleanup()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() > 0:
		return exit.ExitCode()
	}
	fmt.Fprintf(stderr, "crl vet: run %s: %v\n", bin, err)
	return 2
}

// vetFlag reports whether a is one of the analyzer's flags.
func vetFlag(a string) bool {
	name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
	return name == "all" || name == "gormall"
}

// vetEnv is what decides where crl vet gets the analyzer's command.
type vetEnv struct {
	exeDir   string                            // the directory of the running crl ("" when unknown)
	lookPath func(file string) (string, error) // exec.LookPath
	version  string                            // the version of the crl module this crl was built from: "(devel)" from a clone
	source   string                            // the directory of crl's source this crl was built from ("" when unknown)
	tempDir  func() (string, error)
}

// hostEnv is the vetEnv of this process.
func hostEnv() vetEnv {
	env := vetEnv{lookPath: exec.LookPath, tempDir: func() (string, error) { return os.MkdirTemp("", "crlvet") }}
	if exe, err := os.Executable(); err == nil {
		env.exeDir = filepath.Dir(exe)
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		env.version = info.Main.Version
	}
	// Built from a clone (go install ./cmd/crl), the binary knows the
	// path of its source file, and the clone holds the crlvet module.
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		env.source = filepath.Join(filepath.Dir(file), "..", "..")
	}
	return env
}

// analyzerCommand returns the crlvet command to run, and a function that
// removes what was built for this run. In order: crlvet beside crl (where
// go install puts both), crlvet on PATH, else crlvet built for this run:
// from the crlvet module of the clone crl was built from, else from the
// module proxy at the version of the running crl (go install
// github.com/crl-go/crl/crlvet/cmd/crlvet@VERSION, into a temporary
// GOBIN), so that after go install of crl alone, crl vet runs.
func analyzerCommand(env vetEnv, stderr io.Writer) (string, func(), error) {
	nothing := func() {}
	if env.exeDir != "" {
		bin := filepath.Join(env.exeDir, "crlvet"+exeSuffix())
		if info, err := os.Stat(bin); err == nil && !info.IsDir() {
			return bin, nothing, nil
		}
	}
	if bin, err := env.lookPath("crlvet"); err == nil {
		return bin, nothing, nil
	}
	build, err := buildPlan(env)
	if err != nil {
		return "", nothing, err
	}
	goBin, err := env.lookPath("go")
	if err != nil {
		return "", nothing, fmt.Errorf("crlvet is not installed and cannot be built: the go command is not on PATH (%v); %s", err, installHint)
	}
	dir, err := env.tempDir()
	if err != nil {
		return "", nothing, fmt.Errorf("crlvet is not installed, and no directory to build it in: %w", err)
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	cmd := exec.Command(goBin, build.args(dir)...)
	cmd.Dir, cmd.Env = build.dir, append(os.Environ(), "GOBIN="+dir)
	if cmd.Dir == "" { // go install pkg@version, outside any module
		cmd.Dir = dir
	}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		cleanup()
		return "", nothing, fmt.Errorf("crlvet is not installed, and building it (%s) failed: %w; %s", strings.Join(cmd.Args, " "), err, installHint)
	}
	return filepath.Join(dir, "crlvet"+exeSuffix()), cleanup, nil
}

// installHint is how to install crlvet beside crl.
const installHint = "install it beside crl: from a clone of crl, go install ./cmd/crl && go -C crlvet install ./cmd/crlvet; once crl is published, go install " + crlvetPackage + "@VERSION with crl's VERSION"

// goBuild is how to build crlvet: from the crlvet module in dir, else
// at version from the module proxy.
type goBuild struct {
	dir, version string
}

// args are the go command's arguments that put the crlvet command in out.
func (b goBuild) args(out string) []string {
	if b.dir != "" {
		return []string{"build", "-o", filepath.Join(out, "crlvet"+exeSuffix()), "./cmd/crlvet"}
	}
	return []string{"install", crlvetPackage + "@" + b.version} // into GOBIN=out
}

// buildPlan returns how to build crlvet for env: from the crlvet module
// next to crl's source, else at crl's own module version.
func buildPlan(env vetEnv) (goBuild, error) {
	if env.source != "" {
		dir := filepath.Join(env.source, "crlvet")
		if moduleOf(filepath.Join(dir, "go.mod")) == "github.com/crl-go/crl/crlvet" {
			return goBuild{dir: dir}, nil
		}
	}
	if published(env.version) {
		return goBuild{version: env.version}, nil
	}
	return goBuild{}, fmt.Errorf("the analyzer's command crlvet is not installed, and this crl (version %q) was built neither from a clone that holds it nor from a published version; %s", env.version, installHint)
}

// published reports whether v is a version the module proxy can serve: a
// semantic version, not "(devel)" nor a build of modified files ("+dirty").
func published(v string) bool {
	return strings.HasPrefix(v, "v") && !strings.ContainsAny(v, "+ ")
}

// moduleOf returns the module path that the go.mod file at path declares,
// or "".
func moduleOf(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

func exeSuffix() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}
